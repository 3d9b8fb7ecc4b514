"""The view `gate`: the admission gate's verdicts (playbooks/tasks/gpu_gate.yml) in a run's report, one per node."""


def verdicts(report: dict) -> dict[str, dict]:
    """{host: gate verdict} for the hosts the gate judged in this run."""
    return {host: data["data"]["gate"] for host, data in report["hosts"].items()
            if "gate" in (data.get("data") or {})}
