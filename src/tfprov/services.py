"""The views `serving` and `notebook`: what a run left serving on the nodes, read from its report: TF Serving's models
(one row per model version) and the notebook service (the SSH tunnel to reach it; its token stays on the node)."""

from __future__ import annotations

import shlex


def _host_data(report: dict, key: str) -> dict:
    return {host: data["data"][key] for host, data in report["hosts"].items() if key in (data.get("data") or {})}


def serving(report: dict) -> dict[str, list[dict]]:
    """{host: [one row per model version]} for the hosts whose serving check ran in this run."""
    return _host_data(report, "serving")


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
