"""The views `bench` and `check`: bench results from a run's report (rows, one JSON per node, a throughput plot when
matplotlib is there), and the quick GPU check that ends `tfprov run node` (playbooks/gpu_check.yml). The terminal
draws them in terminal.py, the page in report_page.py."""

from __future__ import annotations

import json
from pathlib import Path


def results(report: dict) -> dict[str, dict]:
    """{host: bench JSON} for the hosts whose bench ran in this run."""
    return {host: data["data"]["bench"] for host, data in report["hosts"].items()
            if "bench" in (data.get("data") or {})}


def checks(report: dict) -> dict[str, dict]:
    """{host: quick GPU check JSON} for the hosts whose check ran in this run."""
    return {host: data["data"]["gpu_check"] for host, data in report["hosts"].items()
            if "gpu_check" in (data.get("data") or {})}


def reused_note(check: dict) -> str:
    """A check the tensorflow_gpu role reused (nothing it depends on changed since) says when it ran."""
    return f" (checked {check['reused_from']})" if check.get("reused_from") else ""


def largest_rows(bench: dict) -> list[dict]:
    largest = max(r["n"] for r in bench["results"]) if bench["results"] else None
    return [r for r in bench["results"] if r["n"] == largest]


def write_json(benches: dict[str, dict], directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for host, bench in benches.items():
        path = directory / f"{host}.json"
        path.write_text(json.dumps(bench, indent=2) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def table_rows(bench: dict) -> list[dict]:
    """CPU rows at every size (NumPy is compared per size there); GPU rows at the largest size only."""
    largest = largest_rows(bench)
    return [r for r in bench["results"] if r["device"] == "/CPU:0"] + [r for r in largest if r["device"] != "/CPU:0"]


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed), or None where matplotlib is not installed: it is
    the optional extra tfprov[local], and a run without it still writes its JSON."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(benches: dict[str, dict], path: Path) -> Path | None:
    """Bars of GFLOP/s by node, device and dtype at the largest size (log scale: CPUs and GPUs differ 100x); None
    where matplotlib is not installed (the extra tfprov[local])."""
    plt = pyplot()
    if plt is None:
        return None

    labels, values, colors = [], [], []
    palette = {"float32": "#4c72b0", "bfloat16": "#dd8452", "float16": "#55a868", "numpy": "#8c8c8c"}
    for host, bench in sorted(benches.items()):
        rows = largest_rows(bench)
        for row in rows:
            labels.append(f"{host}\n{row['device']} {row['dtype']}")
            values.append(row["gflops"])
            colors.append(palette.get(row["dtype"], "#937860"))
        numpy = [r for r in bench.get("numpy", []) if rows and r["n"] == rows[0]["n"]]
        if numpy:
            labels.append(f"{host}\nNumPy float32")
            values.append(numpy[0]["gflops"])
            colors.append(palette["numpy"])
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(labels)), 4.5))
    bars = ax.bar(range(len(values)), values, color=colors)
    ax.bar_label(bars, labels=[f"{v:.0f}" for v in values], fontsize=8)
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylabel("GFLOP/s")
    if values and max(values) / max(min(values), 1e-9) > 50:
        ax.set_yscale("log")
    ax.set_title("TensorFlow matmul throughput by node and device")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
