"""`infersize catalog …`: list, show, validate and import catalog entries."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from inferencesize import report
from inferencesize.catalog import (
    KINDS,
    Catalog,
    check_scenario,
    display_path,
    load_catalog,
    load_file,
    read_yaml,
    suggest,
)
from inferencesize.cli.common import (
    check_format,
    emit_data,
    format_option,
    handle_errors,
    input_files,
    open_catalog,
    stdout,
)
from inferencesize.cli.help import Command, Group
from inferencesize.cli.options import CatalogOpt
from inferencesize.engines import forms
from inferencesize.errors import CatalogError, UnknownIdError
from inferencesize.io_write import check_target, write_atomic
from inferencesize.specs import EfficiencySet, GpuSpec, ModelSpec, ScenarioSpec, SystemSpec
from inferencesize.transformer import active_params, kv_bytes_per_token, total_params
from inferencesize.units import GB, GIB, TB, TERA

app = typer.Typer(
    help="Browse, check and extend the hardware / model / scenario catalogs.\n\n"
    "Examples:\n"
    "  infersize catalog list\n"
    "  infersize catalog show deepseek-r1",
    no_args_is_help=True,
    cls=Group,
)

SINGULAR = {
    "gpus": "gpu",
    "systems": "system",
    "models": "model",
    "scenarios": "scenario",
    "efficiency": "efficiency set",
}
FormatOpt = Annotated[str, format_option(report.FORMATS, "Output format (csv: one row per entry).")]


def _summary(kind: str, spec: Any) -> dict[str, Any]:
    if isinstance(spec, GpuSpec):
        return {
            "id": spec.id,
            "name": spec.name,
            "memory_gib": round(spec.memory_bytes / GIB, 1),
            "hbm_tb_per_s": round(spec.hbm_bandwidth_bytes_per_s / TB, 3),
            "bf16_tflops": _tflops(spec.dense_flops.bf16),
            "fp8_tflops": _tflops(spec.dense_flops.fp8),
            "fp4_tflops": _tflops(spec.dense_flops.fp4),
            "tdp_w": spec.tdp_watts,
        }
    if isinstance(spec, SystemSpec):
        return {
            "id": spec.id,
            "name": spec.name,
            "gpu": spec.gpu,
            "gpus_per_node": spec.gpus_per_node,
            "nvlink_domain": spec.nvlink_domain_size,
            "usd_per_gpu_hour": spec.price_usd_per_gpu_hour,
        }
    if isinstance(spec, ModelSpec):
        return {
            "id": spec.id,
            "name": spec.name,
            "params_b": round(total_params(spec) / 1e9, 2),
            "active_b": round(active_params(spec) / 1e9, 2),
            "layers": spec.num_layers,
            "attention": spec.attention,
            "kv_kib_per_token_16bit": round(kv_bytes_per_token(spec, 2.0, context=1) / 1024, 1),
            "max_context": spec.max_context,
        }
    if isinstance(spec, EfficiencySet):
        return {
            "id": spec.id,
            "engine": spec.engine,
            "default": spec.default,
            "engine_names": forms(spec),
            "entries": len(spec.entries),
        }
    assert isinstance(spec, ScenarioSpec)
    return {
        "id": spec.id,
        "model": spec.model,
        "isl": spec.input_tokens,
        "osl": spec.output_tokens,
        "rps": spec.peak_rps if spec.peak_rps is not None else spec.mean_rps,
        "rps_kind": "peak" if spec.peak_rps is not None else "mean",
        "ttft_ms": spec.ttft_ms,
        "itl_ms": spec.itl_ms,
        "e2e_ms": spec.e2e_ms,
    }


def _tflops(value: float | None) -> float | None:
    return None if value is None else round(value / TERA, 1)


@app.command("list", cls=Command)
@handle_errors
def list_cmd(
    kind: Annotated[
        str | None,
        typer.Argument(metavar="KIND", help=f"What to list: {', '.join(KINDS)} (default: all)."),
    ] = None,
    fmt: FormatOpt = "table",
    catalog_dirs: CatalogOpt = None,
) -> None:
    """List catalog entries (ids to use with the other commands).

    Examples:
      infersize catalog list models
      infersize catalog list scenarios --format json
    """
    check_format(fmt, report.FORMATS)
    kinds = list(KINDS)
    if kind is not None:
        if kind not in KINDS:
            raise typer.BadParameter(
                f"'{kind}' is not one of {', '.join(KINDS)}", param_hint="KIND"
            )
        kinds = [kind]
    catalog = open_catalog(catalog_dirs)
    data = {k: [_summary(k, s) for s in catalog.entries(k).values()] for k in kinds}

    def tables(out: Any) -> None:
        for k, rows in data.items():
            # headers in words (kv kib per token 16bit) wrap at spaces in a narrow terminal
            cols = [c.replace("_", " ") for c in rows[0]] if rows else ["id"]
            body = [list(r.values()) for r in rows]
            out.print(report.table(f"{k} ({len(rows)})", cols, body, compact=True))

    rows = [{"kind": SINGULAR[k], **r} for k, rs in data.items() for r in rs]
    emit_data(fmt, data if kind is None else data[kind], rows, tables)


def _find(catalog: Catalog, ident: str) -> tuple[str, Any]:
    for kind in KINDS:
        try:
            return kind, catalog._lookup(kind, ident, kind)
        except UnknownIdError:
            continue
    names = [i for k in KINDS for i in catalog.entries(k)]
    raise suggest(ident, names, "catalog id")


def _details(kind: str, spec: Any) -> dict[str, Any]:
    data: dict[str, Any] = spec.model_dump(exclude_none=True)
    if isinstance(spec, ModelSpec):
        data["computed"] = {
            "total_params": total_params(spec),
            "active_params": active_params(spec),
            "kv_cache_bytes_per_token_16bit": kv_bytes_per_token(spec, 2.0, context=1),
        }
    return {"kind": SINGULAR[kind], **data}


@app.command("show", cls=Command)
@handle_errors
def show_cmd(
    ident: Annotated[
        str,
        typer.Argument(metavar="ID", help="A GPU, system, model, scenario or efficiency set id."),
    ],
    fmt: FormatOpt = "table",
    catalog_dirs: CatalogOpt = None,
) -> None:
    """Show one entry with every field and the values computed from it.

    Fields in SI units (the unit in the field name); a model also shows its parameter count
    and KV-cache bytes per token.

    Examples:
      infersize catalog show llama-3.1-70b
      infersize catalog show h100-sxm --format yaml
    """
    check_format(fmt, report.FORMATS)
    catalog = open_catalog(catalog_dirs)
    kind, spec = _find(catalog, ident)
    data = _details(kind, spec)
    data["file"] = catalog.file_of(kind, spec.id)
    pairs = [(k, _human(k, v)) for k, v in report.flatten(data).items()]
    title = f"{SINGULAR[kind]} {spec.id}"
    emit_data(fmt, data, table=lambda out: out.print(report.key_value_table(title, pairs)))


def _human(key: str, value: Any) -> Any:
    if not isinstance(value, float | int) or isinstance(value, bool):
        return value
    if key.endswith("_bytes_per_s"):
        return f"{value / GB:,.1f} GB/s"
    if key.endswith("_bytes") and value >= GIB:
        return f"{value / GIB:,.2f} GiB ({value / GB:,.2f} GB)"
    if key.startswith("dense_flops_"):
        return f"{value / TERA:,.1f} TFLOPS"
    if key.endswith("_params"):
        return f"{value / 1e9:,.3f} B ({value:,})"
    return value


def _kind_of(path: Path, data: dict[str, Any]) -> str:
    folder = path.resolve().parent.name  # hardware/gpus/x.yaml -> gpus (not any ancestor)
    for kind, (sub, _) in KINDS.items():
        if sub.split("/")[-1] == folder:
            return kind
    if "num_layers" in data:
        return "models"
    if "gpus_per_node" in data:
        return "systems"
    if "hbm_bandwidth" in data or "dense_flops" in data:
        return "gpus"
    return "scenarios"


@app.command("validate", cls=Command)
@handle_errors
def validate_cmd(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATH",
            help="YAML files or catalog directories (default: every catalog in use).",
        ),
    ] = None,
    catalog_dirs: CatalogOpt = None,
) -> None:
    """Check catalog files: YAML syntax, fields, units, cross-references.

    Exit 0 when everything is valid, 1 with a one-line located error otherwise.

    Examples:
      infersize catalog validate
      infersize catalog validate my-catalog/models/my-model.yaml
    """
    out = stdout()
    if not paths:
        catalog = open_catalog(catalog_dirs)
        count = sum(len(catalog.entries(k)) for k in KINDS)
        roots = report.count(len(catalog.roots), "catalog root")
        out.print(f"ok: {report.count(count, 'entry', 'entries')} in {roots} are valid")
        return
    checked = 0
    for path in paths:
        if path.is_dir() and any((path / sub).is_dir() for sub, _ in KINDS.values()):
            catalog = load_catalog([path])
            checked += sum(len(catalog.entries(k)) for k in KINDS)
            continue
        if not path.exists():
            raise CatalogError(display_path(path), "", "file not found")
        data = read_yaml(path)
        kind = _kind_of(path, data)
        spec = load_file(path, KINDS[kind][1])
        if isinstance(spec, ScenarioSpec):
            check_scenario(open_catalog(catalog_dirs), spec, display_path(path))
        elif isinstance(spec, SystemSpec):
            _check_system_gpu(open_catalog(catalog_dirs), spec, display_path(path))
        checked += 1
    out.print(f"ok: {checked} entr{'y' if checked == 1 else 'ies'} valid")


def _check_system_gpu(catalog: Catalog, system: SystemSpec, shown: str) -> None:
    if system.gpu not in catalog.gpus:
        raise CatalogError(shown, "gpu", str(suggest(system.gpu, list(catalog.gpus), "GPU")))


@app.command("import-hf", cls=Command)
@handle_errors
def import_hf_cmd(
    config: Annotated[
        Path, typer.Argument(metavar="CONFIG", help="A HuggingFace config.json (read offline).")
    ],
    ident: Annotated[
        str,
        typer.Option("--id", metavar="ID", help="Catalog id for the new model, e.g. my-llama."),
    ],
    out_file: Annotated[
        Path | None,
        typer.Option(
            "--out",
            metavar="FILE",
            help="Write the YAML here (creates missing folders; an existing file only with"
            " --force).",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --out if it exists (atomically).")
    ] = False,
    name: Annotated[
        str | None, typer.Option("--name", metavar="NAME", help="Display name.")
    ] = None,
    source: Annotated[
        str | None,
        typer.Option("--source", metavar="URL", help="Where the config came from."),
    ] = None,
) -> None:
    """Turn a HuggingFace config.json into a model catalog entry.

    Reads Llama 2/3/4, Mistral/Mixtral, Qwen2/3 and Qwen-MoE, DeepSeek-V2/V3 (MLA + MoE),
    gpt-oss and Gemma 1/2/3 configs. Without --out the YAML goes to stdout; a catalog folder
    with the file in models/ is then usable with --catalog DIR.

    Examples:
      infersize catalog import-hf config.json --id my-llama --out my-catalog/models/my-llama.yaml
      infersize plan --catalog my-catalog --model my-llama --isl 1000 --osl 200 --mean-rps 10 --ttft-ms 500
    """
    from inferencesize.io_hf import import_hf_yaml

    inputs = input_files(config=config)
    if out_file is not None:
        check_target(out_file, "--out", inputs=inputs, overwrite=force, make_folders=True)
    text = import_hf_yaml(config, ident, name=name, source=source)
    if out_file is None:
        report.emit(stdout(), text)
        return
    write_atomic(out_file, text, "--out", inputs=inputs, overwrite=force, make_folders=True)
    typer.echo(f"wrote {out_file}", err=True)
