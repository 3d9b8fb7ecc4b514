"""What a run left serving on the nodes, read from its report: TF Serving's models (a table) and the notebook
service (the SSH tunnel to reach it; its token stays on the node)."""

from __future__ import annotations

import shlex

from rich.table import Table


def _host_data(report: dict, key: str) -> dict:
    return {host: data["data"][key] for host, data in report["hosts"].items() if key in (data.get("data") or {})}


def serving(report: dict) -> dict[str, list[dict]]:
    """{host: [one row per model version]} for the hosts whose serving check ran in this run."""
    return _host_data(report, "serving")


def _ms(value) -> str:
    return f"{value:.1f}" if isinstance(value, int | float) else "-"


def serving_table(found: dict[str, list[dict]]) -> Table:
    out = Table(title="TF Serving: each model's served version, the latency of its predicts over REST, every version "
                      "the server tracks", title_justify="left")
    for column in ("host", "model", "version", "state", "predicts", "p50 ms", "p99 ms", "all versions", "endpoints"):
        out.add_column(column, justify="right" if column in ("version", "predicts", "p50 ms", "p99 ms") else "left")
    for host, rows in sorted(found.items()):
        for row in rows:
            state = row.get("state", "?")
            style = "green" if state == "AVAILABLE" else "red"
            endpoints = " ".join(f"{kind} {row[kind]}" for kind in ("grpc", "rest") if row.get(kind))
            versions = " ".join(f"{v}:{state}" for v, state in (row.get("versions") or {}).items())
            out.add_row(host, str(row.get("model", "?")), str(row.get("version", "?")), f"[{style}]{state}[/{style}]",
                        str(row.get("predicts", "-")), _ms(row.get("p50_ms")), _ms(row.get("p99_ms")), versions,
                        endpoints)
    return out


def notebooks(report: dict) -> dict[str, dict]:
    return _host_data(report, "notebook")


def notebook_lines(found: dict[str, dict]) -> list[str]:
    """Per node: the tunnel to open, then where the token is (printed by the node, to whoever may sudo there)."""
    lines = []
    for host, nb in sorted(found.items()):
        port = nb.get("port", 8888)
        login = f"{nb['user']}@{nb['host']}" if nb.get("user") else str(nb.get("host", host))
        ssh = f"ssh -p {nb.get('ssh_port', 22)} {shlex.quote(login)}"
        lines.append(f"notebook on {host}: {ssh} -N -L {port}:{nb.get('address', '127.0.0.1')}:{port}  "
                     f"then open http://127.0.0.1:{port}/lab with the token from: "
                     f"{ssh} sudo cat {shlex.quote(nb.get('token_file', '?'))}")
    return lines
