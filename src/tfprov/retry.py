"""--retry-failed: the hosts the newest run of a plan left behind (failed, unreachable, or never reached by a
rolling update that stopped; every host of a run that stopped before its end, and of a cluster), as the --limit and
inventory of the next run. Check-mode runs are never "the newest run"."""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import TfprovError
from .rundirs import runs_dir

# What a host's own record in report.json (data.<kind>.result) says when a run did not finish it.
UNFINISHED_RESULTS = ("failed", "not reached")


# Plans whose hosts only work together: a retry takes the whole cluster again (a subset is refused by design).
WHOLE_PLANS = ("cluster",)


@dataclass(frozen=True)
class Retry:
    hosts: list[str]
    limit: str | None
    inventory: str
    run_dir: Path
    whole: bool = False  # every host of that run: it stopped before its end, or its plan needs all of them


def newest_report(root: Path, plan: str) -> Path | None:
    """report.json of the newest run directory of this plan (names are <UTC stamp>-<plan>[-N]: they sort by time)."""
    base = runs_dir(root)
    pattern = re.compile(rf"^(\d{{8}}T\d{{6}}Z)-{re.escape(plan)}(-(\d+))?$")
    found = []
    for path in base.iterdir() if base.is_dir() else []:
        match = pattern.match(path.name)
        if match and (path / "report.json").is_file() and not _check_mode(path / "report.json"):
            found.append(((match.group(1), int(match.group(3) or 1)), path / "report.json"))
    return max(found)[1] if found else None


def _check_mode(path: Path) -> bool:
    """A --check run changed nothing: it is never "the last run" to retry."""
    try:
        return bool(json.loads(path.read_text(encoding="utf-8")).get("check"))
    except (OSError, ValueError):
        return False


def stopped_early(report: dict) -> bool:
    """The run started fewer plays than its plan has: every host of it is unfinished, those it never recorded too."""
    planned = report.get("planned_plays")
    return bool(planned) and len(report.get("plays", [])) < planned


def unfinished_hosts(report: dict) -> list[str]:
    """Failed or unreachable hosts, and hosts whose own record says the run failed or never reached them."""
    hosts = []
    for name, host in sorted(report.get("hosts", {}).items()):
        records = (host.get("data") or {}).values()
        if host.get("status") in ("failed", "unreachable") or any(
                isinstance(record, dict) and record.get("result") in UNFINISHED_RESULTS for record in records):
            hosts.append(name)
    return hosts


def narrow(hosts: list[str], limit: str | None) -> tuple[list[str], str]:
    """The hosts to retry within -l, and the --limit that says so. One pattern (a group, a host, a glob) is left
    to Ansible as an intersection (&pattern); several are matched against the host names here."""
    if not limit:
        return hosts, ",".join(hosts)
    terms = [term.strip() for term in limit.split(",") if term.strip()]
    if len(terms) == 1 and not terms[0].startswith(("&", "!")):
        return hosts, ",".join(hosts) + ",&" + terms[0]
    if any(term[0] in "&!" or ":" in term for term in terms):
        raise TfprovError(f"--limit {limit!r} with --retry-failed: give one pattern or a list of host names")
    kept = [host for host in hosts if any(fnmatch.fnmatchcase(host, term) for term in terms)]
    return kept, ",".join(kept)


def plan_retry(root: Path, plan: str, limit: str | None, inventory: str | None) -> Retry | None:
    """None when there is nothing to retry; an error when there is no earlier run to read."""
    path = newest_report(root, plan)
    if path is None:
        raise TfprovError(f"--retry-failed: no earlier run of plan {plan!r} in {runs_dir(root)}: run it first")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TfprovError(f"--retry-failed: cannot read {path}: {exc}") from None
    unfinished = unfinished_hosts(report)
    whole = unfinished and (stopped_early(report) or plan in WHOLE_PLANS)
    if whole:
        # The same hosts as that run (its --limit, else the whole inventory), or within the new --limit.
        hosts, before = sorted(report.get("hosts", {})), report.get("limit")
        retry_limit = f"{before},&{limit.lstrip('&')}" if before and limit else before or limit or None
    else:
        hosts, retry_limit = narrow(unfinished, limit)
    if not hosts:
        return None
    return Retry(hosts=hosts, limit=retry_limit,
                 inventory=report.get("inventory") or "" if inventory is None else inventory,
                 run_dir=path.parent, whole=bool(whole))


def apply(args, root: Path, plan: str, default_inventory: str, say) -> bool:
    """Turn args.limit and args.inventory into the retry's; False (after saying so) when nothing is left to retry.
    args.inventory is None unless -i was given: then the earlier run's inventory is reused."""
    retry = plan_retry(root, plan, args.limit, args.inventory)
    if retry is None:
        say(f"--retry-failed: nothing to retry: the newest run of plan {plan!r} left no failed, unreachable or "
            f"unreached host{' within --limit ' + args.limit if args.limit else ''}")
        return False
    args.limit, args.inventory = retry.limit, retry.inventory or default_inventory
    why = (" (every host of that run: it stopped before its end, or the plan needs all of them)"
           if retry.whole else "")
    say(f"--retry-failed: {len(retry.hosts)} host(s) from run {retry.run_dir.name}: {', '.join(retry.hosts)}{why} "
        f"(inventory {args.inventory})")
    return True
