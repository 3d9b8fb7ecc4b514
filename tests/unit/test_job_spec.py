"""The job spec (tfprov job run --spec): what a local spec becomes, and every refusal's one line, naming the field."""

import re

import pytest

from tfprov import job_spec
from tfprov.errors import TfprovError

LOCAL = """name: demo
provider: local
image: tfprov/node-baked:bookworm
roles: {worker: {count: 2}, chief: {count: 1}}
job: {shared_dir: out/shared, timeout: 600}
"""


def write(tmp_path, text):
    path = tmp_path / "job.yml"
    path.write_text(text)
    return str(path)


def test_a_local_spec(tmp_path):
    spec = job_spec.load(write(tmp_path, LOCAL), tmp_path)
    assert spec == {"name": "demo", "provider": "local", "cloud": "job-demo", "image": "tfprov/node-baked:bookworm",
                    "node_roles": ["chief", "worker", "worker"],  # the chief is node 1 whatever the spec's order
                    "job": {"shared_dir": str(tmp_path / "out" / "shared"), "strategy": "multi_worker_mirrored",
                            "timeout": 600}}


def test_a_cloud_spec_keeps_its_cluster_part_for_tfprov_up(tmp_path):
    spec = job_spec.load(write(tmp_path, "name: spot\nprovider: aws\nregion: us-east-1\nspot: true\n"
                                         "job: {shared_dir: 's3://bucket/run'}\n"), tmp_path)
    assert spec["cloud_spec"] == {"name": "spot", "provider": "aws", "region": "us-east-1", "spot": True}
    assert spec["job"]["shared_dir"] == "s3://bucket/run"


@pytest.mark.parametrize(("text", "message"), [
    ("[1]", "must be a mapping"),
    ("name: demo\nprovider: azure\n", "provider 'azure': use local, aws, gcp"),
    ("name: Demo\nprovider: local\n", "name 'Demo': use 1-16 lower-case letters"),
    (LOCAL.replace("timeout: 600", "timeout: soon"), "job.timeout 'soon'"),
    (LOCAL.replace("timeout: 600", "epochs: 3"), "job.epochs is not a job setting"),
    (LOCAL.replace("job: {", "job: {strategy: horovod, "), "job.strategy 'horovod'"),
    (LOCAL.replace("shared_dir: out/shared, ", ""), "job.shared_dir is missing"),
    (LOCAL.replace("out/shared", "'gs://b/x'"), "the local cloud needs a directory on this machine"),
    (LOCAL.replace("chief: {count: 1}", "chief: {count: 2}"), "roles.chief.count is 2: a job has exactly one chief"),
    (LOCAL.replace("chief:", "serving:"), "roles.serving is not a cluster role"),
    (LOCAL.replace("{count: 2}", "{count: two}"), "roles.worker.count 'two'"),
    (LOCAL + "zones: [a]\n", "zones is not a local job spec setting"),
    (LOCAL.replace("job: {", "job: {strategy: parameter_server, "), "job.strategy parameter_server needs roles.ps"),
    (LOCAL.replace("roles: {", "roles: {ps: {count: 1}, "), "roles.ps under multi_worker_mirrored"),
    ("name: x\nprovider: gcp\njob: {shared_dir: relative/dir}\n", "a checkpoint on one node's disk is lost with it"),
])
def test_refusals_name_the_field(tmp_path, text, message):
    with pytest.raises(TfprovError, match="^job spec .*" + re.escape(message)):
        job_spec.load(write(tmp_path, text), tmp_path)


def test_a_missing_spec(tmp_path):
    with pytest.raises(TfprovError, match="--spec nope.yml does not exist"):
        job_spec.load("nope.yml", tmp_path)


def test_a_parameter_server_job_has_its_ps_last(tmp_path):
    text = LOCAL.replace("roles: {", "roles: {ps: {count: 1}, ").replace("job: {", "job: {strategy: parameter_server, ")
    spec = job_spec.load(write(tmp_path, text), tmp_path)
    assert spec["node_roles"] == ["chief", "worker", "worker", "ps"]
    assert spec["job"]["strategy"] == "parameter_server"
