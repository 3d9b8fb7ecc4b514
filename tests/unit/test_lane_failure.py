"""tests/support/lane_failure.py: the few lines `make test` ends with when a lane fails."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))
import lane_failure  # noqa: E402

# molecule test on a one-node scenario (molecule 25, docker driver) whose converge has a rescued failure, an
# ignored one, then a real one; recorded as printed, colours included.
MOLECULE_LOG = ROOT / "tests" / "fixtures" / "lanes" / "molecule-converge-failed.log"

PYTEST_LOG = """\
tests/integration/test_e2e_cluster.py ..F.                                   [ 80%]
=================================== FAILURES ===================================
____________ test_a_blocking_problem_fails_every_host_with_the_reason ____________
    def test_a_blocking_problem_fails_every_host_with_the_reason(tmp_path):
>       assert set(report["hosts"]) == set(NODES)
E       AssertionError: assert set() == {'tfprov-itest-1', 'tfprov-itest-2'}
E         Extra items in the right set:
E         'tfprov-itest-1'
tests/integration/test_gate.py:88: AssertionError
=========================== short test summary info ============================
FAILED tests/integration/test_gate.py::test_a_blocking_problem_fails_every_host_with_the_reason - AssertionError: a\
ssert set() == {'tfprov-itest-1', 'tfprov-itest-2'}
1 failed, 68 passed, 1518 deselected in 2092.79s (0:34:52)
"""

IDEMPOTENCE_LOG = """\
  \x1b[2m│\x1b[0m TASK [tfprov.gpu.cuda : Install cuda-toolkit] ****
  \x1b[2m│\x1b[0m fatal: [cuda-default-bookworm]: FAILED! => {"msg": "rescued earlier"}
  \x1b[2m│\x1b[0m PLAY RECAP ****
\x1b[31mCRITICAL\x1b[0m Idempotence test failed because of the following tasks:
* [cuda-default-bookworm] => tfprov.gpu.cuda : Write the profile script
\x1b[31mERROR   \x1b[0m default ➜ idempotence: Executed: Failed
molecule cuda/default: FAILED after 301 s
"""


def test_a_failed_scenario_shows_the_task_that_failed_not_the_rescued_or_ignored_ones():
    lines = lane_failure.excerpt(MOLECULE_LOG.read_text())
    assert lines[0] == "TASK [The real failure]"
    text = "\n".join(lines)
    assert '"msg": "the real failure: something is wrong' in text
    assert "expected refusal" not in text and "non-zero return code" not in text
    assert lines[-1].startswith("failsample ➜ converge: Executed: Failed (Ansible return code was 2")
    assert not any("\x1b" in line or "│" in line for line in lines)


def test_an_idempotence_failure_lists_the_tasks_that_changed():
    assert lane_failure.excerpt(IDEMPOTENCE_LOG) == [
        "CRITICAL Idempotence test failed because of the following tasks:",
        "* [cuda-default-bookworm] => tfprov.gpu.cuda : Write the profile script",
        "ERROR    default ➜ idempotence: Executed: Failed",
        "molecule cuda/default: FAILED after 301 s",
    ]


def test_a_pytest_failure_shows_its_assertion_and_summary():
    lines = lane_failure.excerpt(PYTEST_LOG)
    assert lines[0] == "E       AssertionError: assert set() == {'tfprov-itest-1', 'tfprov-itest-2'}"
    assert lines[-1].startswith("FAILED tests/integration/test_gate.py::test_a_blocking_problem")
    assert len(lines) == 4


def test_anything_else_shows_the_last_lines_cut_to_a_readable_width():
    log = "".join(f"line {i}\n" for i in range(100)) + "x" * 1000 + "\n"
    lines = lane_failure.excerpt(log)
    assert lines[0] == "line 76" and len(lines) == 25
    assert len(lines[-1]) == lane_failure.MAX_WIDTH and lines[-1].endswith("…")


def test_the_command_heads_the_excerpt_with_the_lane_and_survives_a_missing_log(tmp_path):
    log = tmp_path / "A.log"
    log.write_text(IDEMPOTENCE_LOG)
    script = ROOT / "tests" / "support" / "lane_failure.py"
    shown = subprocess.run([sys.executable, script, log], capture_output=True, text=True, check=True).stdout
    assert shown.splitlines()[0] == f"==== lane A: what failed (from {log}) ===="
    assert shown.splitlines()[-1] == "  molecule cuda/default: FAILED after 301 s"
    missing = subprocess.run([sys.executable, script, tmp_path / "B.log"], capture_output=True, text=True)
    assert missing.returncode == 0 and missing.stdout.startswith("lane B: no log to read")
