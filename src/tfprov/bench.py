"""Bench results from a run's report: one JSON per node, a table, and a throughput plot (PNG); and the quick GPU
check that ends `tfprov run node` (playbooks/gpu_check.yml), as a table."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table


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


def check_table(found: dict[str, dict]) -> Table:
    """One row per device: what TensorFlow ran there, how fast, and how close to NumPy's product."""
    out = Table(title="GPU check: one matmul per device TensorFlow sees (the full sweep: tfprov bench)",
                title_justify="left")
    for column in ("host", "TensorFlow", "device", "N", "GFLOP/s", "error vs NumPy (relative)", "result"):
        out.add_column(column, justify="right" if column in ("N", "GFLOP/s", "error vs NumPy (relative)") else "left")
    for host, check in sorted(found.items()):
        version = check.get("tensorflow", {}).get("version", "?")
        for row in check.get("results", []):
            measured = f"{row['gflops']:.1f}" if "gflops" in row else "-"
            error = f"{row['relative_error']:.1e}" if "relative_error" in row else "-"
            result = "[green]ok[/green]" if row.get("ok") else f"[red]{row.get('error', 'wrong')}[/red]"
            out.add_row(host, version, f"{row['device']} {row['name']}", str(row["n"]), measured, error,
                        result + reused_note(check))
        for problem in check.get("problems", []):
            out.add_row(host, version, f"[red]{problem}[/red]", "", "", "", "")
    return out


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


def table(benches: dict[str, dict]) -> Table:
    out = Table(title="bench: matmul throughput (CPU at every size, GPUs at the largest)", title_justify="left")
    for column in ("host", "device", "dtype", "N", "GFLOP/s", "% of peak", "NumPy GFLOP/s", "TF/NumPy"):
        out.add_column(column, justify="right" if column not in ("host", "device", "dtype") else "left")
    for host, bench in sorted(benches.items()):
        numpy = {r["n"]: r["gflops"] for r in bench.get("numpy", [])}
        ratios = {int(n): ratio for n, ratio in bench.get("cpu_vs_numpy_by_size", {}).items()}  # JSON keys: str
        for row in table_rows(bench):
            cpu = row["device"] == "/CPU:0"
            peak = f"{row['percent_of_peak']}% ({row['peak']})" if row.get("percent_of_peak") is not None else "-"
            out.add_row(host, f"{row['device']} {row['name']}", row["dtype"], str(row["n"]), f"{row['gflops']:.1f}",
                        peak, f"{numpy[row['n']]:.1f}" if cpu and row["n"] in numpy else "",
                        f"{ratios[row['n']]:.2f}" if cpu and row["n"] in ratios else "")
        for problem in bench.get("problems", []):
            out.add_row(host, f"[red]{problem}[/red]", "", "", "", "", "", "")
    return out


def plot(benches: dict[str, dict], path: Path) -> Path:
    """Bars of GFLOP/s by node, device and dtype at the largest size (log scale: CPUs and GPUs differ 100x)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
