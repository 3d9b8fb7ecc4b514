"""`tfprov job run` on the local cloud: three nodes (a chief and two workers) from the baked image on a private
network of their own, examples/jobs/train_mwms.py (MultiWorkerMirrored, Keras's BackupAndRestore in the shared
directory), and the nodes removed at the end whatever happened.

First a job no fault interrupts (a worker's link rate-limited hard after the first checkpoint: slower, never
recovered): it runs on every task, ends with the same weights everywhere, its model and logs, and no node left; its
weights are the reference for the recovered runs after it. A worker stopped (`docker stop`, as a preemption) once the
first checkpoint is in the shared directory: tfprov sees it, stops the other tasks, starts the node again (same
name, role and task index) and runs the job again, which resumes from the checkpoint (its epochs start after 0) and
ends with the reference weights on every task. Why a job ended decides what is done: a worker's link cut for 15 s
mid-training (every node alive, TensorFlow's collectives give up) runs the job again on the same nodes, no node
replaced, and it ends with the reference weights; the job's own exception (the chief raises at epoch 3) is not run
again, and rc and message say so. --max-restarts 0 fails at a node's loss naming the node, and Ctrl-C removes the
nodes.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
TFPROV = str(Path(sys.executable).parent / "tfprov")
SCRIPT = str(ROOT / "examples" / "jobs" / "train_mwms.py")
BAKED = os.environ.get("TFPROV_BAKED_IMAGE", "tfprov/node-baked:bookworm")
NAME = "itjob"
NODES = [f"tfprov-job-{NAME}-{i}" for i in (1, 2, 3)]
EPOCHS = 4
REFERENCE = {}  # the weight digest of the job no fault interrupted, when its test ran first (as in make test)


def job_spec(tmp_path: Path) -> Path:
    spec = tmp_path / "job.yml"
    spec.write_text(f"name: {NAME}\nprovider: local\nimage: {BAKED}\n"
                    "roles: {chief: {count: 1}, worker: {count: 2}}\njob: {shared_dir: shared, timeout: 900}\n")
    return spec


def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    """`tfprov job run` in a session of its own (Ctrl-C reaches it as a terminal's would), its output in a file."""
    out = tmp_path / "tfprov-output.txt"
    proc = subprocess.Popen([TFPROV, "job", "run", "--spec", str(job_spec(tmp_path)), SCRIPT,
                             f"--job-arg=--epochs={EPOCHS}", *args], cwd=ROOT, stdout=out.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "TFPROV_RUNS_DIR": str(tmp_path / "runs"), "COLUMNS": "200"})
    return proc, out


def wait_for_checkpoint(proc: subprocess.Popen, tmp_path: Path, timeout: float = 900) -> None:
    """Until the chief has written its first checkpoint (the end of epoch 1) into the shared directory."""
    marker = tmp_path / "shared" / "backup" / "chief" / "checkpoint"
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert proc.poll() is None, "the job ended before its first checkpoint"
        assert time.monotonic() < deadline, "no checkpoint within the timeout"
        time.sleep(1)


def finish(proc: subprocess.Popen, out: Path, timeout: float = 1200) -> tuple[int, str]:
    rc = proc.wait(timeout=timeout)
    return rc, out.read_text()


def newest_record(tmp_path: Path) -> dict:
    return json.loads(sorted((tmp_path / "runs" / "jobs").glob(f"*-{NAME}*/job.json"))[-1].read_text())


def nodes_left() -> list[str]:
    return subprocess.run(["docker", "ps", "-aq", "--filter", f"label=tfprov.cluster=job-{NAME}"],
                          capture_output=True, text=True, check=True).stdout.split()


def digests(tmp_path: Path) -> dict[str, str]:
    return {path.name: path.read_text().strip() for path in sorted((tmp_path / "shared").glob("weights-*.sha256"))}


def history(tmp_path: Path, task: str = "chief-0") -> dict:
    return json.loads((tmp_path / "shared" / f"history-{task}.json").read_text())


@pytest.fixture(autouse=True)
def no_job_nodes():
    subprocess.run([TFPROV, "down", "local"], cwd=ROOT, env={**os.environ, "TFPROV_LOCAL_CLOUD": f"job-{NAME}"},
                   capture_output=True)
    yield
    assert nodes_left() == [], "the job left nodes behind"


def fault(node: int, *args: str) -> None:
    subprocess.run([TFPROV, "local", "fault", str(node), *args], cwd=ROOT, check=True, capture_output=True,
                   env={**os.environ, "TFPROV_LOCAL_CLOUD": f"job-{NAME}"})


def run_steps(job: dict) -> list[dict]:
    return [step for step in job["steps"] if step["step"] == "run cluster"]


def test_a_job_no_fault_interrupts_runs_on_every_task_and_leaves_no_node_even_on_a_link_rate_limited_hard(tmp_path):
    # First in the module: a congested link is slow but alive, so nothing is recovered and the weights are those of
    # an uninterrupted run, the reference the recovered runs below must equal.
    proc, out = start(tmp_path, "--job-arg=--pause=2")
    wait_for_checkpoint(proc, tmp_path)
    fault(3, "rate", "--mbit", "1")
    rc, text = finish(proc, out)
    assert rc == 0, text[-4000:]
    job = newest_record(tmp_path)
    assert job["state"] == "succeeded" and job["restarts"] == [] and job["nodes_fate"] == "removed", job
    assert [s["cause"] for s in run_steps(job)] == ["succeeded"], job["steps"]
    assert job["log_files"] == ["chief-0.log", "worker-0.log", "worker-1.log"]
    assert "nodes removed" in text
    assert history(tmp_path)["epochs"] == list(range(EPOCHS))
    assert (tmp_path / "shared" / "model" / "saved_model.pb").is_file()
    found = digests(tmp_path)
    assert sorted(found) == ["weights-chief-0.sha256", "weights-worker-0.sha256", "weights-worker-1.sha256"]
    assert len(set(found.values())) == 1, found  # every task holds the same weights
    REFERENCE["digest"] = next(iter(found.values()))


def test_a_worker_stopped_mid_training_is_replaced_and_the_job_resumes_from_its_checkpoint(tmp_path):
    # 12 s after each epoch: `job logs` (an Ansible run, slower beside CI's other lane) must end before the training.
    proc, out = start(tmp_path, "--job-arg=--pause=12")
    wait_for_checkpoint(proc, tmp_path)
    # From another terminal, while the job runs: its state and a task's log, read from its node now.
    env = {**os.environ, "TFPROV_RUNS_DIR": str(tmp_path / "runs"), "COLUMNS": "200"}
    status = subprocess.run([TFPROV, "job", "status"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert status.returncode == 0 and f"-{NAME}: running" in status.stdout, status.stdout + status.stderr
    logs = subprocess.run([TFPROV, "job", "logs", "chief-0"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert logs.returncode == 0 and "==> chief-0 <==" in logs.stdout and "chief-0: epoch 1/" in logs.stdout, \
        logs.stdout[-2000:] + logs.stderr
    subprocess.run(["docker", "stop", NODES[2]], check=True, capture_output=True)  # a preempted worker
    rc, text = finish(proc, out)
    assert rc == 0, text[-4000:]
    assert f"lost {NODES[2]} during the job: stopping the other tasks" in text
    assert f"recovery 1 of at most 3: replacing {NODES[2]}" in text
    job = newest_record(tmp_path)
    [restart] = job["restarts"]
    assert restart["lost"] == [NODES[2]] and job["state"] == "succeeded" and job["nodes_fate"] == "removed"
    assert [step["status"] for step in job["steps"] if step["step"] == "run cluster"] == ["failed", "successful"]
    # Resumed, not started again: the last run trained only the epochs after the checkpoint.
    resumed = history(tmp_path)["epochs"]
    assert resumed and resumed[0] > 0 and resumed[-1] == EPOCHS - 1, resumed
    found = digests(tmp_path)
    assert len(found) == 3 and len(set(found.values())) == 1, found
    assert sorted(p.name for p in (tmp_path / "shared" / "logs").glob("*.log")) == [
        "chief-0.log", "worker-0.log", "worker-1.log"]  # with the outputs
    if "digest" in REFERENCE:  # the job no fault interrupted ran first (make test): nothing was lost
        assert next(iter(found.values())) == REFERENCE["digest"]


def test_a_link_cut_for_15_s_runs_the_job_again_on_the_same_nodes_from_its_checkpoint(tmp_path):
    proc, out = start(tmp_path, "--job-arg=--pause=2")
    wait_for_checkpoint(proc, tmp_path)
    fault(3, "cut")  # the node runs on; its link is down
    time.sleep(15)
    fault(3, "restore")
    rc, text = finish(proc, out)
    assert rc == 0, text[-4000:]
    job = newest_record(tmp_path)
    [restart] = job["restarts"]
    assert restart["cause"] == "infrastructure" and restart["replaced"] == [], restart
    assert [s["cause"] for s in run_steps(job)] == ["infrastructure", "succeeded"]
    assert text.count("created (") == 3 and "replacing" not in text  # no node replaced or created again
    assert "recovery 1 of at most 3: an infrastructure error" in text
    resumed = history(tmp_path)["epochs"]
    assert resumed and resumed[0] > 0 and resumed[-1] == EPOCHS - 1, resumed
    found = digests(tmp_path)
    assert len(found) == 3 and len(set(found.values())) == 1, found
    if "digest" in REFERENCE:  # the job no fault interrupted ran first (make test): nothing was lost
        assert next(iter(found.values())) == REFERENCE["digest"]
    status = subprocess.run([TFPROV, "job", "status"], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "TFPROV_RUNS_DIR": str(tmp_path / "runs"), "COLUMNS": "250"})
    assert "recovery 1 at attempt 1: an infrastructure error" in status.stdout, status.stdout


def test_the_jobs_own_exception_is_not_run_again(tmp_path):
    proc, out = start(tmp_path, "--job-arg=--raise-at-epoch=3")
    rc, text = finish(proc, out)
    assert rc == 4, text[-4000:]
    assert "the job failed by itself (the job's own error: chief-0 on " in text, text[-4000:]
    assert "ValueError: a bug in the job's own code at epoch 3" in text
    assert "not run again (--max-restarts-on-errors 0)" in text and "nodes removed" in text
    job = newest_record(tmp_path)
    assert job["state"] == "failed" and job["restarts"] == [] and len(run_steps(job)) == 1
    assert job["outcome"]["cause"] == "job_error"


def test_max_restarts_zero_fails_at_the_loss_naming_the_node(tmp_path):
    proc, out = start(tmp_path, "--job-arg=--pause=6", "--max-restarts", "0")
    wait_for_checkpoint(proc, tmp_path)
    subprocess.run(["docker", "stop", NODES[1]], check=True, capture_output=True)
    rc, text = finish(proc, out)
    assert rc not in (0, 1), text[-4000:]
    assert f"lost {NODES[1]} during the job and --max-restarts 0 allows no more recoveries" in text
    assert "nodes removed" in text
    assert newest_record(tmp_path)["state"] == "failed"


def test_ctrl_c_removes_the_nodes(tmp_path):
    proc, out = start(tmp_path, "--job-arg=--pause=6")
    wait_for_checkpoint(proc, tmp_path)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends its foreground process group
    rc, text = finish(proc, out, timeout=300)
    assert rc == 130, text[-4000:]
    assert "interrupted (Ctrl-C)" in text and "nodes removed" in text
    job = newest_record(tmp_path)
    assert job["state"] == "interrupted" and job["nodes_fate"] == "removed"
