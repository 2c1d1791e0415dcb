"""Contents of the shipped catalogs: every file loads, ids and aliases resolve, systems point at
known GPUs, scenarios fit their model, and parameter counts computed from the architecture match
the reference table (tests/data/reference_models.csv, a verbatim copy of
../shared/reference/models.csv) and the vendors' published sizes.

Where ../shared/reference (beside the repository) is present, the GPU and system YAML files are
also checked field by field against gpus.csv / systems.csv; those tests skip without it.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pytest

from inferencesize.catalog import Catalog, check_scenario, load_catalog, load_file
from inferencesize.specs import GpuSpec, ModelSpec, ScenarioSpec, SystemSpec
from inferencesize.transformer import active_params, total_params

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
SHARED = REPO.parent / "shared"
SHARED_REF = SHARED / "reference"

GIB = 2**30
TERA = 1e12

GPU_IDS = [
    "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-80gb", "h100-sxm", "h100-pcie", "h100-nvl",
    "h200-sxm", "h200-nvl", "h20", "gh200", "gh200-144gb", "b200", "b300", "gb200", "gb300",
    "l40s", "l40", "l4", "a10", "a10g", "rtx-6000-ada", "rtx-pro-6000", "mi250x", "mi300x",
    "mi325x", "mi355x", "gaudi2", "gaudi3", "tpu-v5e", "tpu-v5p", "tpu-v6e",
]  # fmt: skip
SYSTEM_IDS = [
    "dgx-a100", "dgx-a100-320gb", "dgx-h100", "dgx-h200", "hgx-h100", "dgx-b200", "hgx-b300",
    "gb200-nvl72", "gb300-nvl72", "l40s-8x", "mi300x-8x", "mi325x-8x", "gaudi3-8x",
    "tpu-v5e-pod", "tpu-v6e-pod",
    # cloud instances (price per GPU-hour)
    "aws-p5-48xlarge", "aws-p5e-48xlarge", "aws-p5en-48xlarge", "aws-p4d-24xlarge",
    "azure-nd96isr-h100-v5", "gcp-a3-highgpu", "gcp-a3-ultragpu-8g", "lambda-8x-h100",
    "lambda-8x-b200",
]  # fmt: skip
MODEL_IDS = [
    "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3.1-8b",
    "llama-3.1-70b", "llama-3.1-405b", "llama-3.3-70b", "llama-4-scout", "llama-4-maverick",
    "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "qwen2.5-7b", "qwen2.5-32b", "qwen2.5-72b",
    "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "deepseek-r1",
    "gpt-oss-20b", "gpt-oss-120b", "gemma-2-27b", "gemma-3-27b", "nemotron-4-340b", "phi-4",
    "falcon-40b", "falcon-180b", "gpt-j-6b", "nemo-gpt-43b", "gpt-3-175b",
    "llama-3.1-nemotron-70b", "phi-3-mini", "phi-3-medium",
    # published sizes (models/*.yaml source): GLM-5 744B (zai-org/GLM-5 README), Kimi K2.5 1T
    # (MoonshotAI/Kimi-K2.5 README), MiniMax-M2.5 230B (sglang docs/basic_usage/minimax_m2.md),
    # Qwen3.5 397B-A17B (QwenLM/Qwen3.5 README)
    "glm-5", "kimi-k2.5", "minimax-m2.5", "qwen3.5-397b-a17b",
]  # fmt: skip
SCENARIO_IDS = [
    "default", "seed-llama3-8b-fp8", "seed-nemo-43b", "translation-short", "translation-long",
    "generation", "summarization-rag", "summarization-long", "reasoning",
]  # fmt: skip

#: Labels used in ../shared/calibration/*.csv (column gpu / model) -> catalog id.
CALIBRATION_GPUS = {
    "H100-SXM-80GB": "h100-sxm",
    "A100-SXM-80GB": "a100-sxm-80gb",
    "A100-PCIe-80GB": "a100-pcie-80gb",
    "H200-SXM-141GB": "h200-sxm",
    "H100-NVL-94GB": "h100-nvl",
    'GH200 (DLI label "GH200 120GB")': "gh200",  # the DLI "120GB" part is the 96 GB HBM3 GH200
    "GH200 (480GB superchip; 96GB HBM3)": "gh200",
    "L40": "l40",
    "L40S": "l40s",
    "B200-180GB": "b200",
    "B300-SXM-288GB": "b300",
}
CALIBRATION_MODELS = {
    "Llama-2-7B": "llama-2-7b",
    "Llama-2-13B": "llama-2-13b",
    "Llama-2-70B": "llama-2-70b",
    "Llama-2-70B (70B)": "llama-2-70b",
    "Llama-3-8B": "llama-3-8b",
    "Llama-3-70B": "llama-3-70b",
    "Llama-3.1-8B": "llama-3.1-8b",
    "Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "Llama-3.1-70B": "llama-3.1-70b",
    "Llama-3.1-405B": "llama-3.1-405b",
    "Mistral-7B": "mistral-7b",
    "Mixtral-8x7B": "mixtral-8x7b",
    "Mixtral-8x22B": "mixtral-8x22b",
    "Falcon-180B": "falcon-180b",
    "GPT-J-6B": "gpt-j-6b",
    "NeMo-GPT-43B": "nemo-gpt-43b",
    "Qwen3-32B": "qwen3-32b",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Qwen3.5-397B-A17B": "qwen3.5-397b-a17b",
    "DeepSeek-V3": "deepseek-v3",
    "DeepSeek-R1": "deepseek-r1",
    "gpt-oss-120b": "gpt-oss-120b",
    "GLM-5": "glm-5",
    "Kimi-K2.5": "kimi-k2.5",
    "MiniMax-M2.5": "minimax-m2.5",
}

#: models.csv `name` -> catalog id (every row of the reference table).
REFERENCE_MODELS = {
    "Llama 2 7B": "llama-2-7b",
    "Llama 2 13B": "llama-2-13b",
    "Llama 2 70B": "llama-2-70b",
    "Llama 3 8B": "llama-3-8b",
    "Llama 3 70B": "llama-3-70b",
    "Llama 3.1 8B": "llama-3.1-8b",
    "Llama 3.1 70B": "llama-3.1-70b",
    "Llama 3.1 405B": "llama-3.1-405b",
    "Llama 3.3 70B Instruct": "llama-3.3-70b",
    "Llama 4 Scout 17B-16E": "llama-4-scout",
    "Llama 4 Maverick 17B-128E": "llama-4-maverick",
    "Mistral 7B v0.1": "mistral-7b",
    "Mixtral 8x7B": "mixtral-8x7b",
    "Mixtral 8x22B": "mixtral-8x22b",
    "Qwen2.5 7B Instruct": "qwen2.5-7b",
    "Qwen2.5 32B Instruct": "qwen2.5-32b",
    "Qwen2.5 72B Instruct": "qwen2.5-72b",
    "Qwen3 8B": "qwen3-8b",
    "Qwen3 32B": "qwen3-32b",
    "Qwen3 30B-A3B": "qwen3-30b-a3b",
    "Qwen3 235B-A22B": "qwen3-235b-a22b",
    "DeepSeek-V3": "deepseek-v3",
    "DeepSeek-R1": "deepseek-r1",
    "gpt-oss-20b": "gpt-oss-20b",
    "gpt-oss-120b": "gpt-oss-120b",
    "Gemma 2 27B": "gemma-2-27b",
    "Gemma 3 27B": "gemma-3-27b",
    "Nemotron-4 340B": "nemotron-4-340b",
    "Llama-3.1-Nemotron-70B-Instruct": "llama-3.1-nemotron-70b",
    "Phi-3-mini-4k-instruct": "phi-3-mini",
    "Phi-3-medium-4k-instruct": "phi-3-medium",
    "Phi-4 (14B)": "phi-4",
    "Falcon 40B": "falcon-40b",
    "Falcon 180B": "falcon-180b",
    "NVIDIA GPT-43B (NeMo/Megatron 'gpt3-43b-multi-1.1t')": "nemo-gpt-43b",
    "GPT-3 175B": "gpt-3-175b",
}

#: gpus.csv `name` -> catalog id.
REFERENCE_GPUS = {
    "A100 40GB SXM4": "a100-sxm-40gb",
    "A100 80GB SXM4": "a100-sxm-80gb",
    "A100 80GB PCIe": "a100-pcie-80gb",
    "H100 SXM5 80GB": "h100-sxm",
    "H100 PCIe 80GB": "h100-pcie",
    "H100 NVL 94GB": "h100-nvl",
    "H200 SXM 141GB": "h200-sxm",
    "H200 NVL 141GB": "h200-nvl",
    "H20 96GB": "h20",
    "GH200 (H100 GPU, 96GB HBM3)": "gh200",
    "GH200 (H100 GPU, 144GB HBM3e)": "gh200-144gb",
    "B200 (HGX/DGX B200)": "b200",
    "B300 (HGX B300, Blackwell Ultra)": "b300",
    "GB200 (per Blackwell GPU, NVL72)": "gb200",
    "GB300 (per Blackwell Ultra GPU, NVL72)": "gb300",
    "L40S": "l40s",
    "L4": "l4",
    "A10": "a10",
    "A10G (AWS G5)": "a10g",
    "RTX 6000 Ada Generation": "rtx-6000-ada",
    "RTX PRO 6000 Blackwell (Workstation / Server Ed.)": "rtx-pro-6000",
    "Instinct MI250X": "mi250x",
    "Instinct MI300X": "mi300x",
    "Instinct MI325X": "mi325x",
    "Instinct MI355X": "mi355x",
    "Gaudi 2": "gaudi2",
    "Gaudi 3": "gaudi3",
    "TPU v5e": "tpu-v5e",
    "TPU v5p": "tpu-v5p",
    "TPU v6e (Trillium)": "tpu-v6e",
}

#: systems.csv `name` (up to the first " (" or " [") -> catalog id.
REFERENCE_SYSTEMS = {
    "NVIDIA DGX A100": "dgx-a100",
    "NVIDIA DGX H100": "dgx-h100",
    "NVIDIA DGX H200": "dgx-h200",
    "NVIDIA HGX H100 8-GPU": "hgx-h100",
    "NVIDIA DGX B200": "dgx-b200",
    "NVIDIA HGX B300 8-GPU": "hgx-b300",
    "NVIDIA GB200 NVL72": "gb200-nvl72",
    "NVIDIA GB300 NVL72": "gb300-nvl72",
    "Typical 8x L40S PCIe server": "l40s-8x",
    "AMD Instinct MI300X Platform": "mi300x-8x",
    "AMD Instinct MI325X Platform": "mi325x-8x",
    "Intel Gaudi 3 8-accelerator baseboard / HLS-3": "gaudi3-8x",
    "Google Cloud TPU v5e pod": "tpu-v5e-pod",
    "Google Cloud TPU v6e": "tpu-v6e-pod",
    "AWS p5.48xlarge": "aws-p5-48xlarge",
    "AWS p5e.48xlarge": "aws-p5e-48xlarge",
    "AWS p5en.48xlarge": "aws-p5en-48xlarge",
    "AWS p4d.24xlarge": "aws-p4d-24xlarge",
    "Azure ND96isr H100 v5": "azure-nd96isr-h100-v5",
    "GCP a3-highgpu": "gcp-a3-highgpu",
    "GCP a3-ultragpu-8g": "gcp-a3-ultragpu-8g",
    "Lambda 8x H100 SXM": "lambda-8x-h100",
    "Lambda 8x B200 SXM6": "lambda-8x-b200",
}

#: Reference cells that were blank (unknown) and were filled in the YAML on purpose; each is
#: explained in that file's `source`.
FILLED_BLANKS = {
    ("mi355x", "nvlink_gb_s_per_gpu_bidirectional"),  # 7 IF links x 153.6 GB/s (AMD spec)
    ("mi325x-8x", "inter_node_gb_s_per_gpu"),  # assumed = MI300X platform
    ("tpu-v6e-pod", "inter_node_gb_s_per_gpu"),  # 4 x 200 Gbps per 8-chip host (v6e docs)
    ("gcp-a3-highgpu", "inter_node_gb_s_per_gpu"),  # 4 x 200 Gbps GPUDirect-TCPX / 8 GPUs
    ("lambda-8x-h100", "inter_node_gb_s_per_gpu"),  # assumed = dgx-h100
    ("lambda-8x-b200", "inter_node_gb_s_per_gpu"),  # assumed = dgx-b200
    ("gb200-nvl72", "system_power_kw"),  # 120 kW rack / 18 trays (per node)
}


def _norm(name: str) -> str:
    # Same normalisation as the catalog's id/alias lookup: lower case, keep [a-z0-9.].
    return re.sub(r"[^a-z0-9.]", "", name.lower())


def _words(text: str) -> str:
    return " ".join(text.split())


_COPY = "not re-checked against a copy of it"
#: How the catalogs word the reference table's working notes on how a figure was checked.
_NOTES = (
    (" [corpus-verified]", ""),
    (
        "[NOT verified in corpus - treat as estimate]",
        "(an estimate, not checked against a document)",
    ),
    ("not re-verified in corpus]", "not re-checked against a document]"),
    ("[NVIDIA config not re-read in corpus]", "[NVIDIA config not re-read]"),
    ("in docs corpus", "in the docs"),
    # "[recalled]": a figure from the document the source names that the collector could
    # not reopen; the catalog says so in plain words
    ("[recalled, not re-checked against a document]", f"[from that document; {_COPY}]"),
    (
        "[recalled from datasheet, not re-checked against a document]",
        f"[from that datasheet; {_COPY}]",
    ),
    ("[values recalled from datasheet; ", f"[values from that datasheet, {_COPY}; "),
    ("[recalled; ", f"[from that document, {_COPY}; "),
    ("[recalled]", f"[from that document; {_COPY}]"),
    ("power/NICs recalled]", f"power and NICs from that datasheet, {_COPY}]"),
    ("power recalled]", f"power from that datasheet, {_COPY}]"),
    ("recalled from datasheet", f"from that datasheet, {_COPY}"),
    ("NIC config recalled, not verified", "NIC config"),
)


def _reference(text: str) -> str:
    """A reference-table source as the catalog states it (same figures and links)."""
    out = _words(text)
    for old, new in _NOTES:
        out = out.replace(old, new)
    out = re.sub(r"\[corpus-verified, ([^\]]*)\]", r"[\1]", out)
    return out.replace("corpus-verified", "checked")


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _shared_csv(name: str) -> list[dict[str, str]]:
    path = SHARED_REF / name
    if not path.is_file():
        pytest.skip(f"{path} not present (shared reference data lives beside the repository)")
    return _read_csv(path)


REFERENCE_MODEL_ROWS = _read_csv(DATA / "reference_models.csv")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("INFERSIZE_CATALOG", raising=False)  # only the shipped catalog
        return load_catalog()


# --------------------------------------------------------------------------------------------
# Presence, loading, references
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "ids"),
    [("gpus", GPU_IDS), ("systems", SYSTEM_IDS), ("models", MODEL_IDS),
     ("scenarios", SCENARIO_IDS)],
)  # fmt: skip
def test_every_listed_id_is_present(catalog: Catalog, kind: str, ids: list[str]) -> None:
    missing = sorted(set(ids) - set(catalog.entries(kind)))
    assert not missing, f"{kind} missing: {missing}"


SPEC_DIRS: list[tuple[str, type[Any]]] = [
    ("hardware/gpus", GpuSpec),
    ("hardware/systems", SystemSpec),
    ("models", ModelSpec),
    ("scenarios", ScenarioSpec),
]
SHIPPED_FILES = [
    pytest.param(path, spec, id=str(path.relative_to(REPO)))
    for sub, spec in SPEC_DIRS
    for path in sorted((REPO / sub).glob("*.y*ml"))
]


@pytest.mark.parametrize(("path", "spec"), SHIPPED_FILES)
def test_every_shipped_file_loads_and_is_named_by_its_id(path: Path, spec: type[Any]) -> None:
    entry = load_file(path, spec)
    assert entry.id == path.stem
    if spec is not ScenarioSpec:
        assert len(_words(entry.source)) >= 20, "source must say where the numbers come from"


def test_shipped_file_counts(catalog: Catalog) -> None:
    # Guards against a file silently dropped from a folder.
    assert len(catalog.gpus) >= len(GPU_IDS)
    assert len(catalog.systems) >= len(SYSTEM_IDS)
    assert len(catalog.models) >= len(MODEL_IDS)
    assert len(catalog.scenarios) >= len(SCENARIO_IDS)


def test_each_system_names_a_known_gpu(catalog: Catalog) -> None:
    for ident, system in catalog.systems.items():
        assert system.gpu in catalog.gpus, f"{ident}: gpu {system.gpu!r} is not a GPU id"


@pytest.mark.parametrize("kind", ["gpus", "systems", "models", "scenarios"])
def test_aliases_resolve_to_their_own_entry(catalog: Catalog, kind: str) -> None:
    lookup = {"gpus": catalog.gpu, "systems": catalog.system, "models": catalog.model,
              "scenarios": catalog.scenario}[kind]  # fmt: skip
    owner: dict[str, str] = {}
    for ident, spec in catalog.entries(kind).items():
        for name in [ident, *getattr(spec, "aliases", [])]:
            key = _norm(name)
            assert owner.setdefault(key, ident) == ident, (
                f"{kind}: {name!r} of {ident} collides with {owner[key]}"
            )
            assert lookup(name) is spec, f"{kind}: {name!r} does not resolve to {ident}"


def test_gpu_and_system_names_do_not_collide(catalog: Catalog) -> None:
    # `hardware NAME` tries systems first, then GPUs: a shared name would hide the GPU.
    gpu_names = {_norm(n) for i, g in catalog.gpus.items() for n in [i, *g.aliases]}
    sys_names = {_norm(n) for i, s in catalog.systems.items() for n in [i, *s.aliases]}
    assert not gpu_names & sys_names


@pytest.mark.parametrize(("label", "ident"), sorted(CALIBRATION_GPUS.items()))
def test_calibration_gpu_labels_resolve(catalog: Catalog, label: str, ident: str) -> None:
    assert catalog.gpu(label).id == ident
    gpu, system = catalog.hardware(label)
    assert (gpu.id, system) == (ident, None)


@pytest.mark.parametrize(("label", "ident"), sorted(CALIBRATION_MODELS.items()))
def test_calibration_model_labels_resolve(catalog: Catalog, label: str, ident: str) -> None:
    assert catalog.model(label).id == ident


def test_calibration_labels_cover_the_shared_data() -> None:
    files = sorted((SHARED / "calibration").glob("*.csv"))
    if not files:
        pytest.skip("../shared/calibration not present")
    gpus, models = set(), set()
    for path in files:
        for row in _read_csv(path):
            gpus.add(row["gpu"])
            models.add(row["model"])
    gpus.discard("(not stated)")
    assert gpus <= set(CALIBRATION_GPUS), gpus - set(CALIBRATION_GPUS)
    assert models <= set(CALIBRATION_MODELS), models - set(CALIBRATION_MODELS)


@pytest.mark.parametrize("ident", SCENARIO_IDS)
def test_scenarios_reference_known_entries_and_fit_the_context(
    catalog: Catalog, ident: str
) -> None:
    scenario = catalog.scenarios[ident]
    model, hardware, stages = check_scenario(catalog, scenario, ident)  # ids known, ISL + OSL fits
    assert scenario.input_tokens + scenario.output_tokens <= model.max_context
    if scenario.pipeline is None:  # each hardware id once, in the order stated
        assert hardware == [catalog.hardware(h) for h in dict.fromkeys(scenario.hardware)]
    for stage, (stage_model, stage_hardware) in zip(scenario.pipeline or [], stages, strict=True):
        assert stage_model == catalog.model(stage.model)
        ids = dict.fromkeys(stage.hardware or scenario.hardware)
        assert stage_hardware == [catalog.hardware(h) for h in ids]


def test_seed_scenarios(catalog: Catalog) -> None:
    # NVIDIA DLI seed: 70.7 req/s per DGX H100 at TTFT < 500 ms -> ceil(200 / 70.7) = 3 DGX.
    for ident in ("default", "seed-llama3-8b-fp8"):
        s = catalog.scenarios[ident]
        assert (s.model, s.isl, s.osl, s.peak_rps, s.ttft_ms) == ("llama-3-8b", 2000, 200, 200, 500)
        assert (s.hardware, s.precision, s.tp) == (["dgx-h100"], ["fp8"], [1])
    # NeMo 43B: 31 peak RPS at 2.4 req/s per DGX -> ceil(31 / 2.4) = 13 DGX H100.
    s = catalog.scenarios["seed-nemo-43b"]
    assert (s.model, s.isl, s.osl, s.peak_rps, s.ttft_ms) == ("nemo-gpt-43b", 3500, 500, 31, 3000)
    assert (s.batching, s.precision, s.hardware) == ("static", ["fp16"], ["dgx-h100"])
    assert (s.engine, s.batch_sizes) == ("trtllm-0.9-static", [1, 2, 4, 8, 16, 32, 64])


# --------------------------------------------------------------------------------------------
# Units: GiB vs GB, dense vs sparse, bidirectional vs one-way
# --------------------------------------------------------------------------------------------


def test_memory_is_gib_and_bandwidth_is_decimal(catalog: Catalog) -> None:
    h100 = catalog.gpus["h100-sxm"]
    # "80GB" H100 = 80 GiB = 80 * 2**30 = 85,899,345,920 bytes (not 80e9).
    assert h100.memory_bytes == 80 * GIB == 85_899_345_920
    assert h100.memory_label == "80GB"
    # 3.35 TB/s = 3.35e12 B/s (decimal).
    assert h100.hbm_bandwidth_bytes_per_s == pytest.approx(3.35e12)
    # Measured nvidia-smi totals where documented: L40S 46068 MiB = 45.0 GiB, B300 268.6 GiB.
    assert catalog.gpus["l40s"].memory_bytes == pytest.approx(45.0 * GIB)
    assert catalog.gpus["b300"].memory_bytes == pytest.approx(268.6 * GIB)
    assert catalog.gpus["b300"].memory_label == "288GB"
    # L40 (not in the reference): vendor 48 GB read as 48 GiB.
    assert catalog.gpus["l40"].memory_bytes == 48 * GIB


def test_flops_are_dense_not_sparse(catalog: Catalog) -> None:
    h100 = catalog.gpus["h100-sxm"].dense_flops
    # Datasheet FP8 3,958 TFLOPS* (2:4 sparse) / 2 = 1,979 dense; BF16 1,979* / 2 = 989.5.
    assert h100.fp8 == pytest.approx(1979 * TERA)
    assert h100.bf16 == pytest.approx(989.5 * TERA)
    assert h100.int8 == pytest.approx(1979 * TERA)
    # HGX B200: FP4 144 PF* for 8 GPUs -> /8 = 18 PF* -> /2 = 9 PF dense per GPU.
    assert catalog.gpus["b200"].dense_flops.fp4 == pytest.approx(9000 * TERA)
    # MI300X: ROCm lists dense FP8 2,614.9 (AMD's data sheet prints 5,229.8 with sparsity).
    assert catalog.gpus["mi300x"].dense_flops.fp8 == pytest.approx(2614.9 * TERA)
    # L40: FP8 724* -> 362 dense; BF16 362.1* -> 181.05 dense.
    l40 = catalog.gpus["l40"].dense_flops
    assert (l40.fp8, l40.bf16) == (pytest.approx(362 * TERA), pytest.approx(181.05 * TERA))
    # Unknown stays unknown (blank in the reference), never 0.
    assert catalog.gpus["a100-sxm-80gb"].dense_flops.fp8 is None
    assert catalog.gpus["gaudi3"].dense_flops.tf32 is None


def test_link_directions(catalog: Catalog) -> None:
    # NVLink 4: 900 GB/s bidirectional per GPU (450 each way); NIC: 400 Gb/s / 8 = 50 GB/s one way.
    dgx = catalog.systems["dgx-h100"]
    assert dgx.intra_node_bandwidth_bytes_per_s == pytest.approx(900e9)
    assert dgx.inter_node_bandwidth_bytes_per_s == pytest.approx(50e9)
    assert catalog.gpus["h100-sxm"].scale_up_bandwidth_bytes_per_s == pytest.approx(900e9)
    # PCIe-only parts say 0 (no scale-up link), not unknown.
    assert catalog.gpus["l40s"].scale_up_bandwidth_bytes_per_s == 0
    # p4d: EFA 400 Gb/s per instance / 8 GPUs / 8 bits = 6.25 GB/s per GPU.
    assert catalog.systems["aws-p4d-24xlarge"].inter_node_bandwidth_bytes_per_s == pytest.approx(
        6.25e9
    )


def test_prices(catalog: Catalog) -> None:
    cloud = {
        "aws-p5-48xlarge": 6.88,  # $55.04/h / 8
        "aws-p5e-48xlarge": 5.408,  # Capacity Block $43.26/h / 8
        "aws-p5en-48xlarge": 7.912,  # $63.296/h / 8
        "aws-p4d-24xlarge": 2.745,  # $21.958/h / 8
        "azure-nd96isr-h100-v5": 12.29,  # $98.32/h / 8
        "gcp-a3-highgpu": 10.98,
        "gcp-a3-ultragpu-8g": 10.4365,
        "lambda-8x-h100": 3.99,
        "lambda-8x-b200": 6.69,
    }
    for ident, price in cloud.items():
        system = catalog.systems[ident]
        assert system.price_usd_per_gpu_hour == pytest.approx(price), ident
        assert system.price_source and re.search(r"20\d\d", system.price_source), ident
        assert system.price_usd is None
    assert catalog.systems["dgx-a100-320gb"].price_usd == 199_000
    assert catalog.systems["gaudi3-8x"].price_usd == 125_000
    # No public list price: never invented.
    for ident in ("dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "gb300-nvl72", "dgx-a100"):
        assert catalog.systems[ident].price_usd is None, ident
    # gpus.csv has no prices.
    assert all(g.price_usd_per_gpu_hour is None for g in catalog.gpus.values())


# --------------------------------------------------------------------------------------------
# Parameter counts
# --------------------------------------------------------------------------------------------


def test_hand_counted_llama_3_1_8b(catalog: Catalog) -> None:
    m = catalog.models["llama-3.1-8b"]
    h, layers, ffn, vocab, kv_dim = 4096, 32, 14336, 128256, 8 * 128
    attention = h * h + 2 * h * kv_dim + h * h  # q, k, v, o: 41,943,040
    mlp = 3 * h * ffn  # gate, up, down (SwiGLU): 176,160,768
    norms = 2 * h  # two RMSNorms: 8,192
    per_layer = attention + mlp + norms  # 218,112,000
    embeddings = 2 * vocab * h + h  # untied table + lm_head + final norm: 1,050,677,248
    expected = layers * per_layer + embeddings
    assert expected == 8_030_261_248  # the published safetensors count
    assert total_params(m) == expected
    assert active_params(m) == expected  # dense


def test_hand_counted_gpt_j_6b(catalog: Catalog) -> None:
    m = catalog.models["gpt-j-6b"]
    h, layers, ffn, vocab = 4096, 28, 16384, 50400
    attention = 4 * h * h  # q, k, v, out without bias: 67,108,864
    mlp = 2 * h * ffn + ffn + h  # fc_in, fc_out with biases: 134,238,208
    norms = 2 * h  # ONE LayerNorm (weight + bias) per layer: 8,192
    per_layer = attention + mlp + norms  # 201,355,264
    embeddings = 2 * vocab * h + vocab + 2 * h  # wte + lm_head (+ bias) + ln_f: 412,935,392
    expected = layers * per_layer + embeddings  # 6,050,882,784
    assert total_params(m) == expected == 6_050_882_784
    # Model card: 6,053,381,344 -> within 0.05 %.
    assert expected == pytest.approx(6_053_381_344, rel=5e-4)


@pytest.mark.parametrize("ident", MODEL_IDS)
def test_computed_total_within_3_percent_of_published(catalog: Catalog, ident: str) -> None:
    model = catalog.models[ident]
    if model.published_params_b is None:
        # Falcon 40B: only the marketing name "40B" exists, 3.2 % below the exact 41.30B.
        assert ident == "falcon-40b"
        return
    assert total_params(model) / 1e9 == pytest.approx(model.published_params_b, rel=0.03)


def test_reference_copy_is_verbatim() -> None:
    shared = SHARED_REF / "models.csv"
    if not shared.is_file():
        pytest.skip(f"{shared} not present")
    assert (DATA / "reference_models.csv").read_bytes() == shared.read_bytes()


def test_every_reference_row_is_mapped() -> None:
    assert {row["name"] for row in REFERENCE_MODEL_ROWS} == set(REFERENCE_MODELS)


def _reference_params() -> list[Any]:
    return [
        pytest.param(row, id=REFERENCE_MODELS.get(row["name"], row["name"]))
        for row in REFERENCE_MODEL_ROWS
    ]


@pytest.mark.parametrize("row", _reference_params())
def test_total_and_active_params_match_reference(catalog: Catalog, row: dict[str, str]) -> None:
    model = catalog.models[REFERENCE_MODELS[row["name"]]]
    # The reference computed both from config.json; active includes embedding and lm_head.
    assert total_params(model) / 1e9 == pytest.approx(float(row["total_params_b"]), rel=0.005)
    assert active_params(model) / 1e9 == pytest.approx(float(row["active_params_b"]), rel=0.01)


def _int(cell: str) -> int:
    return int(float(cell))


@pytest.mark.parametrize("row", _reference_params())
def test_architecture_fields_match_reference(catalog: Catalog, row: dict[str, str]) -> None:
    m = catalog.models[REFERENCE_MODELS[row["name"]]]
    hf_id = row["hf_id"]
    if "/" in hf_id and not hf_id.startswith("("):
        assert m.hf_id == hf_id
    assert m.num_layers == _int(row["num_layers"])
    assert m.hidden_size == _int(row["hidden_size"])
    assert m.num_attention_heads == _int(row["num_attention_heads"])
    assert m.num_kv_heads == _int(row["num_kv_heads"])
    assert m.head_dim == _int(row["head_dim"])
    assert m.vocab_size == _int(row["vocab_size"])
    assert m.max_context == _int(row["max_context"])
    assert m.tie_embeddings == (row["tie_embeddings"] == "true")
    assert m.attention == row["attention_type"]
    if m.id == "llama-4-maverick":
        # Dense layers use intermediate_size_mlp; the CSV column holds the expert width.
        assert m.intermediate_size == 16384
    else:
        assert m.intermediate_size == _int(row["intermediate_size"])
    if row["sliding_window"]:
        assert m.sliding_window is not None and m.sliding_window.tokens == _int(
            row["sliding_window"]
        )
    else:
        assert m.sliding_window is None
    if row["moe_num_experts"]:
        assert m.moe is not None
        assert m.moe.num_experts == _int(row["moe_num_experts"])
        assert m.moe.top_k == _int(row["moe_top_k"])
        assert m.moe.shared_experts == _int(row["moe_shared_experts"] or "0")
        assert m.moe.expert_intermediate_size == _int(row["moe_intermediate_size"])
        assert m.moe.first_k_dense_layers == _int(row["first_k_dense_layers"] or "0")
    else:
        assert m.moe is None
    if row["attention_type"] == "MLA":
        assert m.mla is not None
        assert m.mla.kv_lora_rank == _int(row["mla_kv_lora_rank"])
        assert m.mla.q_lora_rank == _int(row["mla_q_lora_rank"])
        assert m.mla.qk_rope_head_dim == _int(row["mla_qk_rope_head_dim"])
        assert m.mla.qk_nope_head_dim == _int(row["mla_qk_nope_head_dim"])
        assert m.mla.v_head_dim == _int(row["mla_v_head_dim"])
    # Provenance is kept verbatim (YAML folding only normalises whitespace).
    assert _words(m.source).startswith(_reference(row["source"]))


def test_architecture_details(catalog: Catalog) -> None:
    models = catalog.models
    assert all(models[i].attention_bias for i in ("qwen2.5-7b", "qwen2.5-32b", "qwen2.5-72b"))
    assert all(models[i].qk_norm for i in ("qwen3-8b", "qwen3-32b", "qwen3-30b-a3b",
                                           "qwen3-235b-a22b", "gemma-3-27b"))  # fmt: skip
    for ident in ("gemma-2-27b", "gemma-3-27b"):
        assert (models[ident].activation, models[ident].norms_per_layer) == ("geglu", 4)
    oss = models["gpt-oss-120b"]
    assert oss.attention_sinks and oss.attention_bias and oss.attention_output_bias
    assert oss.moe is not None and oss.moe.router_bias and oss.moe.expert_bias
    assert oss.sliding_window is not None
    assert (oss.sliding_window.tokens, oss.sliding_window.local_layers,
            oss.sliding_window.every) == (128, 1, 2)  # fmt: skip
    maverick = models["llama-4-maverick"]
    assert maverick.moe is not None and maverick.moe.layer_step == 2
    assert maverick.sliding_window is not None and maverick.sliding_window.kind == "chunked"
    scout = models["llama-4-scout"]
    assert scout.moe is not None and scout.moe.layer_step == 1
    deepseek = models["deepseek-v3"]
    assert deepseek.moe is not None and deepseek.moe.router_bias
    assert deepseek.moe.first_k_dense_layers == 3
    gpt3 = models["gpt-3-175b"]
    assert gpt3.learned_position_embeddings == 2048 and gpt3.mlp_bias and gpt3.tie_embeddings
    assert models["nemotron-4-340b"].activation == "relu2"
    for ident in ("falcon-40b", "falcon-180b"):
        assert (models[ident].norm, models[ident].activation) == ("layernorm", "gelu")
    gptj = models["gpt-j-6b"]
    assert (gptj.norms_per_layer, gptj.lm_head_bias, gptj.attention_bias) == (1, True, False)
    mistral = models["mistral-7b"].sliding_window
    assert mistral is not None and (mistral.tokens, mistral.every) == (4096, 1)


# --------------------------------------------------------------------------------------------
# Hardware transcription (needs ../shared/reference)
# --------------------------------------------------------------------------------------------


def _check_cell(ident: str, column: str, cell: str, actual: float | None, unit: float) -> None:
    if cell == "":
        if (ident, column) in FILLED_BLANKS:
            assert actual is not None
        else:
            assert actual is None, f"{ident}.{column}: blank in the reference, got {actual}"
        return
    assert actual is not None, f"{ident}.{column}: missing (reference {cell})"
    assert actual == pytest.approx(float(cell) * unit), f"{ident}.{column}"


def test_gpus_match_reference(catalog: Catalog) -> None:
    rows = _shared_csv("gpus.csv")
    assert {r["name"] for r in rows} == set(REFERENCE_GPUS)
    for row in rows:
        ident = REFERENCE_GPUS[row["name"]]
        g = catalog.gpus[ident]
        assert g.name == row["name"]
        assert g.memory_bytes == pytest.approx(float(row["memory_gib"]) * GIB), ident
        assert g.memory_label == f"{row['memory_gb']}GB", ident
        _check_cell(ident, "hbm", row["hbm_bandwidth_tb_s"], g.hbm_bandwidth_bytes_per_s, 1e12)
        for p in ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4"):
            _check_cell(ident, p, row[f"dense_tflops_{p}"], g.dense_flops.get(p), TERA)
        _check_cell(ident, "nvlink_gb_s_per_gpu_bidirectional",
                    row["nvlink_gb_s_per_gpu_bidirectional"],
                    g.scale_up_bandwidth_bytes_per_s, 1e9)  # fmt: skip
        _check_cell(ident, "tdp_w", row["tdp_w"], g.tdp_watts, 1.0)
        assert g.pcie_gen == (int(row["pcie_gen"]) if row["pcie_gen"] else None), ident
        assert g.launch_year == int(row["launch_year"]), ident
        assert _words(g.source).startswith(_reference(row["source"])), ident


def _system_id(name: str) -> str:
    hits = [i for prefix, i in REFERENCE_SYSTEMS.items()
            if name == prefix or name.startswith((prefix + " ", prefix + "("))]  # fmt: skip
    assert len(hits) == 1, name
    return hits[0]


def test_systems_match_reference(catalog: Catalog) -> None:
    rows = _shared_csv("systems.csv")
    for row in rows:
        ident = _system_id(row["name"])
        s = catalog.systems[ident]
        # systems.csv names the GPU in short form ("B200", "GB200 (per Blackwell GPU)"):
        # the catalog GPU's reference name must start with it (DGX A100 lists both A100s).
        gpu_name = catalog.gpus[s.gpu].name
        assert any(gpu_name.startswith(n.strip()) for n in row["gpu"].split(" / ")) or (
            gpu_name.startswith(row["gpu"].split(" (")[0])
        ), (ident, gpu_name, row["gpu"])
        assert s.gpus_per_node == int(row["gpus_per_node"]), ident
        assert s.nvlink_domain_size == int(row["nvlink_domain_size"]), ident
        _check_cell(ident, "intra", row["intra_node_gb_s_per_gpu"],
                    s.intra_node_bandwidth_bytes_per_s, 1e9)  # fmt: skip
        _check_cell(ident, "inter_node_gb_s_per_gpu", row["inter_node_gb_s_per_gpu"],
                    s.inter_node_bandwidth_bytes_per_s, 1e9)  # fmt: skip
        if ident != "gb200-nvl72":  # 120 kW is the rack; the YAML states one 4-GPU tray
            _check_cell(ident, "system_power_kw", row["system_power_kw"], s.power_watts, 1e3)
        else:
            assert s.power_watts == pytest.approx(120e3 / 18, rel=0.01)
        assert _words(s.source).startswith(_reference(row["source"])), ident


@pytest.mark.parametrize(("path", "spec"), SHIPPED_FILES)
def test_sources_say_plainly_where_a_figure_comes_from(path: Path, spec: type[Any]) -> None:
    """No collector's working notes ('[recalled]', 'corpus', 're-verified'): a figure is from
    the document named, checked against a copy of it or not, or stated as an assumption."""
    text = " ".join(path.read_text(encoding="utf-8").split()).lower()
    for note in ("recalled", "corpus", "re-verified"):
        assert note not in text, f"{path.name}: '{note}'"
