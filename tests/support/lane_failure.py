#!/usr/bin/env python3
"""Print what failed in one of `make test`'s lanes, from its log (.tfprov/lanes/<lane>.log), in a few lines.

`make test` runs its lanes at once and a lane's log is interleaved with the others' for an hour; CI often keeps only
the end of the output. So when a lane fails, `make test` ends with this excerpt:
- a molecule scenario: the last task that failed (not ignored) before molecule gave up, with its message, and
  molecule's own failure lines (an idempotence failure's list of changed tasks among them);
- pytest: its short summary (FAILED/ERROR lines) and the assertion lines (`E   ...`) before it;
- anything else: the log's last lines.
"""

import argparse
import re
import sys
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BOX = re.compile(r"^\s*[│┌└]\s?")
TASK = re.compile(r"^(TASK|RUNNING HANDLER) \[")
FAILED_HOST = re.compile(r"^(fatal|failed): \[")
# Molecule's own failure lines (its "glob failed" line for a collection-level scenario is only a warning).
MOLECULE_GAVE_UP = re.compile(r"^CRITICAL (?!.*glob failed)|Executed: Failed")
IDEMPOTENCE_CHANGED = re.compile(r"^\* \[")
OURS = re.compile(r"FAILED after \d+ s")  # the Makefile's line for a failed scenario
PYTEST_SUMMARY = re.compile(r"^=+ short test summary info =+$")
PYTEST_RESULT = re.compile(r"^(FAILED|ERROR) \S")
MAX_WIDTH = 240


def clean(line: str) -> str:
    """One log line as a person reads it: no colours, no molecule box, cut at MAX_WIDTH."""
    line = BOX.sub("", ANSI.sub("", line.rstrip("\n")))
    return line if len(line) <= MAX_WIDTH else line[:MAX_WIDTH - 1] + "…"


def failed_task(lines: list[str], end: int) -> list[str]:
    """The last task of the playbook run ending at `end` with a failure that was not ignored: its header and its
    failure lines."""
    for start in range(end - 1, -1, -1):
        if lines[start].startswith("ansible-playbook "):  # the run's first line: no other run's task
            break
        if not TASK.match(lines[start]):
            continue
        block = lines[start:next((i for i in range(start + 1, end) if TASK.match(lines[i])
                                  or lines[i].startswith("PLAY RECAP")), end)]
        failures = [i for i, line in enumerate(block) if FAILED_HOST.match(line)]
        if failures and not any(line.startswith("...ignoring") for line in block[failures[-1]:]):
            return [block[0]] + [line for line in block[1:] if line.strip() and not line.strip().startswith("*")]
    return []


def molecule_excerpt(lines: list[str]) -> list[str]:
    gave_up = next((i for i, line in enumerate(lines) if MOLECULE_GAVE_UP.search(line)), None)
    if gave_up is None:
        return []
    ours = [line for line in lines[gave_up:] if OURS.search(line) or MOLECULE_GAVE_UP.search(line)
            or IDEMPOTENCE_CHANGED.match(line)]
    # An idempotence failure lists the tasks that changed; a failed task before it would be one that was rescued.
    task = [] if "Idempotence" in lines[gave_up] else failed_task(lines, gave_up)
    return task + ours


def pytest_excerpt(lines: list[str]) -> list[str]:
    summary = next((i for i in range(len(lines) - 1, -1, -1) if PYTEST_SUMMARY.match(lines[i])), None)
    if summary is None:
        return []
    results = [line for line in lines[summary + 1:] if PYTEST_RESULT.match(line)]
    assertions = [line for line in lines[:summary] if line.startswith("E ")]
    return assertions[-15:] + results


def excerpt(text: str, tail: int = 25) -> list[str]:
    lines = [clean(line) for line in text.splitlines()]
    return molecule_excerpt(lines) or pytest_excerpt(lines) or [line for line in lines if line.strip()][-tail:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="the lane's log, named after the lane")
    args = parser.parse_args()
    name = args.log.stem
    try:
        text = args.log.read_text(errors="replace")
    except OSError as err:
        print(f"lane {name}: no log to read ({err})")
        return 0
    print(f"==== lane {name}: what failed (from {args.log}) ====")
    for line in excerpt(text)[-60:]:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
