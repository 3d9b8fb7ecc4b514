"""What nodes cost: a cluster spec's price per hour before `tfprov up` creates anything (and the refusal above
--max-hourly-cost), a run's nodes on its report page, and `tfprov fleet status`'s cost so far (prices.py)."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from .errors import TfprovError
from .prices import Item, PriceBook, load_table
from .project import project_root

IDLE_NIGHT_HOURS = 12  # what "an idle night" means in the warning: a job ends at 8 pm, nobody looks until 8 am


def money(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"${value:,.2f}" if value >= 10 else f"${value:,.3f}"


def cache_path(root: Path | None = None) -> Path:
    return (root or project_root()) / ".tfprov" / "cache" / "prices.json"


def book(offline: bool | None = None) -> PriceBook:
    root = project_root()
    return PriceBook(cache_path(root), load_table(root / "data" / "prices.yml"), offline=offline)


def region_of(provider: str, zone: str) -> str:
    """us-east-1a -> us-east-1 (AWS); us-central1-a -> us-central1 (Google)."""
    if not zone:
        return ""
    return zone[:-1] if provider == "aws" and zone[-1].isalpha() else zone.rsplit("-", 1)[0]


def spec_items(spec: dict) -> list[tuple[dict, Item]]:
    provider, market = spec["provider"], "spot" if spec.get("spot") else "on-demand"
    zone = (spec.get("zones") or [""])[0]
    items = [(node, Item(provider, spec["region"], node["type"], market, node.get("accelerator") or "",
                         int(node.get("accelerator_count") or 0), zone, spec.get("project") or ""))
             for node in spec["nodes"]]
    for tpu in spec.get("tpus") or []:  # TPU VMs: priced per type from the table (the catalog prices chips)
        items.append(({"name": tpu.get("name"), "role": "tpu", "type": f"tpu-{tpu.get('type')}", "gpu_count": 0},
                      Item(provider, spec["region"], f"tpu-{tpu.get('type')}", market)))
    return items


def spec_cost(spec: dict, prices: PriceBook) -> dict:
    nodes = []
    for node, item in spec_items(spec):
        price = prices.price(item)
        nodes.append({"name": node["name"], "role": node["role"], "type": node["type"],
                      "gpu": f"{node.get('gpu_count')} x {node.get('gpu_model')}" if node.get("gpu_count") else "-",
                      "market": item.market, "hourly": price.hourly, "source": price.source})
    return _totals(nodes, spec)


def _totals(nodes: list[dict], spec: dict) -> dict:
    known = [n["hourly"] for n in nodes if n["hourly"] is not None]
    unknown = [n["name"] for n in nodes if n["hourly"] is None]
    guarded = [n for n in nodes if n["role"] in (spec.get("idle_stop_roles") or [])]
    return {"nodes": nodes, "hourly": None if unknown else round(sum(known), 6), "known_hourly": round(sum(known), 6),
            "unknown": unknown, "idle_stop_minutes": int(spec.get("idle_stop_minutes") or 0),
            "guarded_hourly": round(sum(n["hourly"] or 0 for n in guarded), 6),
            "guarded_unknown": any(n["hourly"] is None for n in guarded)}


def spec_table(found: dict, spec: dict) -> Table:
    title = f"{spec['provider']} cluster {spec['name']}: price per hour before anything is created"
    table = Table(title=title, title_justify="left")
    for column in ("node", "role", "type", "GPU", "market", "per hour", "price from"):
        table.add_column(column, justify="right" if column == "per hour" else "left")
    for node in found["nodes"]:
        table.add_row(node["name"], node["role"], node["type"], node["gpu"], node["market"], money(node["hourly"]),
                      node["source"])
    return table


def spec_lines(found: dict) -> list[str]:
    """The cluster's price per hour, and what an idle night costs with and without the idle-stop guard."""
    total = found["hourly"]
    lines = [f"cluster: {money(total)} per hour" if total is not None else
             f"cluster: at least {money(found['known_hourly'])} per hour; unknown for "
             f"{', '.join(found['unknown'])}"]
    night = found["guarded_hourly"] * IDLE_NIGHT_HOURS
    minutes = found["idle_stop_minutes"]
    unknown = " (some of them unknown: not counted)" if found["guarded_unknown"] else ""
    if minutes:
        lines.append(f"an idle night ({IDLE_NIGHT_HOURS} h) of the guarded nodes would cost {money(night)} without "
                     f"the idle-stop guard; with idle_stop_minutes {minutes}, about "
                     f"{money(found['guarded_hourly'] * minutes / 60)}{unknown}")
    elif found["guarded_hourly"]:
        lines.append(f"no idle-stop guard (idle_stop_minutes 0): an idle night ({IDLE_NIGHT_HOURS} h) of the GPU "
                     f"nodes costs {money(night)}{unknown}")
    return lines


def check_max(found: dict, limit: float | None) -> None:
    """--max-hourly-cost: refuse above it, and refuse when a price is unknown (the limit cannot be checked)."""
    if limit is None:
        return
    if found["unknown"]:
        raise TfprovError(f"--max-hourly-cost {limit:g}: the price of {', '.join(found['unknown'])} is unknown, so "
                          f"the limit cannot be checked: nothing was created (add the type to data/prices.yml, give "
                          f"the price API credentials, or drop --max-hourly-cost)")
    if found["hourly"] > limit:
        raise TfprovError(f"the cluster costs {money(found['hourly'])} per hour, above --max-hourly-cost "
                          f"{money(limit)}: nothing was created (fewer or smaller nodes, spot: true, or a higher "
                          f"limit)")


def host_item(record: dict) -> Item | None:
    """A report's node record (resolve.yml's `node`, nodes_up's `cloud_node`) as a price item; None off the clouds."""
    provider = record.get("provider")
    if provider not in ("aws", "gcp") or not record.get("type"):
        return None
    zone = str(record.get("zone") or "")
    return Item(provider, region_of(provider, zone), str(record["type"]).rsplit("/", 1)[-1],
                "spot" if record.get("market") == "spot" else "on-demand", zone=zone)


def cloud_items(report: dict) -> dict[str, Item]:
    found = {}
    for name, host in report.get("hosts", {}).items():
        data = host.get("data") or {}
        item = host_item(data.get("node") or data.get("cloud_node") or {})
        if item:
            found[name] = item
    return found


def run_cost(report: dict, prices: PriceBook | None = None) -> dict:
    """Per cloud node of the run: its price per hour and what the run's duration cost (cache and table only: a
    report page never calls an API). Local nodes are not priced."""
    items = cloud_items(report)
    if items:
        prices = prices or book(offline=True)
    hours = (report.get("seconds") or 0) / 3600
    nodes = []
    for name, item in sorted(items.items()):
        price = prices.price(item)
        nodes.append({"host": name, "provider": item.provider, "type": item.type, "region": item.region,
                      "market": item.market, "hourly": price.hourly, "source": price.source,
                      "run": None if price.hourly is None else round(price.hourly * hours, 6)})
    known = [n for n in nodes if n["hourly"] is not None]
    return {"nodes": nodes, "hourly": round(sum(n["hourly"] for n in known), 6),
            "run": round(sum(n["run"] for n in known), 6), "unknown": len(nodes) - len(known)}
