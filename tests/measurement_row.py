"""A hand-built measurement row for tests: Llama-3-8B fp8 on one H100, 2000 / 200 tokens,
10 clients, NIM 1.0; keyword arguments override any column."""

from __future__ import annotations

from inferencesize.io_measurements import Measurement


def row(metric: str, value: float = 1.0, concurrency: str = "10", **kw: object) -> Measurement:
    fields: dict[str, object] = {
        "row": 2,
        "source": "lab",
        "model": "llama-3-8b",
        "gpu": "h100-sxm",
        "num_gpus": 1,
        "precision": "fp8",
        "kv_precision": "fp8",
        "tp": 1,
        "pp": 1,
        "ep": None,
        "isl": 2000.0,
        "osl": 200.0,
        "concurrency": concurrency,
        "metric": metric,
        "value": value,
        "unit": "",
        "engine": "NIM",
        "engine_version": "1.0",
    }
    fields.update(kw)
    return Measurement(**fields)  # type: ignore[arg-type]
