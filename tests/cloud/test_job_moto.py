"""`tfprov job run` with an AWS job spec against moto: Spot nodes from the spec, up -> run -> down, and a node
terminated during the job (a Spot interruption) replaced in the next zone with capacity. moto runs no instance, so
the job's run of the cluster is played by the test: the first run loses the terminated worker (unreachable), the
second succeeds."""

import json

import pytest
import yaml
from test_aws_moto import instances

from tfprov import cli, job, job_nodes

pytestmark = pytest.mark.cloud


def tags(instance):
    return {tag["Key"]: tag["Value"] for tag in instance["Tags"]}


def job_files(write_spec, tmp_path, name, workers, **changes):
    """A job spec of a chief and `workers` workers, its shared directory in S3, and a script that computes nothing."""
    spec = yaml.safe_load(open(write_spec(name, **changes)))
    spec["roles"] = {"chief": {"count": 1, "type": "g4dn.xlarge"},
                     "worker": {"count": workers, "type": "g4dn.xlarge"}}
    spec["job"] = {"shared_dir": f"s3://tfprov-jobs/{name}"}
    path = tmp_path / "job.yml"
    path.write_text(yaml.safe_dump(spec))
    script = tmp_path / "train.py"
    script.write_text("print('no compute in moto')\n")
    return path, script


def test_a_spot_job_is_recovered_in_the_next_zone_and_its_nodes_are_removed(capsys, ec2, write_spec, aws_env,
                                                                              tmp_path, monkeypatch):
    path, script = job_files(write_spec, tmp_path, "mjob", workers=2, spot=True)
    seen = []

    def run_cluster(plan, root, options, progress):
        made = instances(ec2, "mjob", states=("pending", "running"))
        seen.append({tags(i)["Name"]: i for i in made})
        assert plan.name == "cluster" and options.extravars["dist_tf_cluster_shared_dir"] == "s3://tfprov-jobs/mjob"
        if len(seen) == 1:  # the worker is taken back by EC2, and its zone has no capacity left for it
            worker = seen[0]["mjob-worker-1"]
            ec2.terminate_instances(InstanceIds=[worker["InstanceId"]])
            aws_env.full_zones.add(worker["Placement"]["AvailabilityZone"])
            host = f"mjob-worker-1_{worker['InstanceId']}"
            return {"status": "unreachable", "rc": 5, "hosts": {host: {"status": "unreachable", "failed_tasks": []}}}, \
                tmp_path / "run-1"
        return {"status": "successful", "rc": 0, "hosts": {}}, tmp_path / "run-2"

    monkeypatch.setattr(job, "run_plan", run_cluster)
    monkeypatch.setattr(job, "_collect_logs", lambda nodes, record, say: None)  # no instance to read a log from
    rc = cli.main(["job", "run", "--spec", str(path), str(script), "--max-restarts", "1"])
    out, err = capsys.readouterr()
    assert rc == 0, err + out[-3000:]
    first, second = seen
    assert sorted(first) == ["mjob-chief-0", "mjob-worker-0", "mjob-worker-1"]
    assert {i.get("InstanceLifecycle") for i in first.values()} == {"spot"}
    lost_zone = first["mjob-worker-1"]["Placement"]["AvailabilityZone"]
    replacement = second["mjob-worker-1"]
    assert replacement["InstanceId"] != first["mjob-worker-1"]["InstanceId"]
    zones = yaml.safe_load(path.read_text())["zones"]
    assert replacement["Placement"]["AvailabilityZone"] == next(z for z in zones if z != lost_zone)
    assert replacement.get("InstanceLifecycle") == "spot"
    # The others were not touched.
    assert {n: i["InstanceId"] for n, i in second.items() if n != "mjob-worker-1"} == \
        {n: i["InstanceId"] for n, i in first.items() if n != "mjob-worker-1"}
    assert instances(ec2, "mjob", states=("pending", "running", "stopping", "stopped")) == []
    assert "recovery 1 of at most 1: replacing mjob-worker-1_" in out and "nodes removed" in out
    [record] = (tmp_path / "runs" / "jobs").glob("*-mjob/job.json")
    data = json.loads(record.read_text())
    assert data["state"] == "succeeded" and data["nodes_fate"] == "removed" and len(data["restarts"]) == 1


def test_an_instance_that_runs_but_did_not_answer_for_less_than_the_grace_is_kept(capsys, ec2, write_spec, aws_env,
                                                                                    tmp_path, monkeypatch):
    """A node slow to answer SSH is not a dead one: EC2 says it runs, it answers again within --unreachable-grace,
    and the job runs again on the very same instances (none created, none terminated)."""
    path, script = job_files(write_spec, tmp_path, "kjob", workers=1)
    seen, asked = [], []

    def run_cluster(plan, root, options, progress):
        made = instances(ec2, "kjob", states=("pending", "running"))
        seen.append({tags(i)["Name"]: i["InstanceId"] for i in made})
        if len(seen) == 1:  # the worker's SSH did not answer during the run; EC2 still runs it
            host = f"kjob-worker-0_{seen[0]['kjob-worker-0']}"
            return {"status": "unreachable", "rc": 5, "hosts": {host: {"status": "unreachable", "failed_tasks": []}}}, \
                tmp_path / "run-1"
        return {"status": "successful", "rc": 0, "hosts": {}}, tmp_path / "run-2"

    def answering(self):  # moto's addresses are fake: SSH is played here; the worker answers at the third ask
        asked.append(1)
        hosts = [f"{name}_{instance}" for name, instance in seen[0].items()]
        return {host: len(asked) >= 3 or not host.startswith("kjob-worker-0") for host in hosts}

    monkeypatch.setattr(job, "run_plan", run_cluster)
    monkeypatch.setattr(job, "_collect_logs", lambda nodes, record, say: None)
    monkeypatch.setattr(job, "PROBE_SECONDS", 0.01)
    monkeypatch.setattr(job_nodes.CloudJobNodes, "answering", answering)
    rc = cli.main(["job", "run", "--spec", str(path), str(script), "--unreachable-grace", "60"])
    out, err = capsys.readouterr()
    assert rc == 0, err + out[-3000:]
    first, second = seen
    assert second == first  # the same instances: none replaced
    assert len(asked) == 3, out
    assert "did not answer during the run, but it runs: it is kept" in out and "replacing" not in out
    [record] = (tmp_path / "runs" / "jobs").glob("*-kjob/job.json")
    data = json.loads(record.read_text())
    [restart] = data["restarts"]
    assert restart["cause"] == "infrastructure" and restart["replaced"] == []
    assert restart["evidence"][0]["line"] == "did not answer during the run"
    assert data["state"] == "succeeded" and data["nodes_fate"] == "removed"
    assert instances(ec2, "kjob", states=("pending", "running", "stopping", "stopped")) == []
