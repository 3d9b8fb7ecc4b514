"""moto_server on 127.0.0.1 (a free port of 25000-25099) behind the test proxy, with dummy keys: no real AWS."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))

import moto_server  # noqa: E402
from aws_capacity_proxy import AwsCapacityProxy  # noqa: E402

PORTS = range(25000, 25100)


@pytest.fixture(scope="session")
def moto_port(tmp_path_factory):
    port = moto_server.free_port(PORTS)
    try:
        proc = moto_server.start(port, tmp_path_factory.mktemp("moto") / "moto.log")
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield port
    moto_server.stop(proc)


@pytest.fixture(scope="session")
def aws_proxy(moto_port):
    proxy = AwsCapacityProxy(moto_port, moto_server.free_port(PORTS, skip=(moto_port,))).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def aws_env(aws_proxy, monkeypatch, tmp_path):
    """The environment every tfprov / ansible process of a test sees: dummy keys, the proxy as AWS's endpoint,
    and nothing read from the user's ~/.aws."""
    aws_proxy.full_zones.clear()
    aws_proxy.quotas.clear()
    aws_proxy.refused.clear()
    for key in list(os.environ):
        if key.startswith("AWS_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_proxy.url)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("TFPROV_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("COLUMNS", "200")
    return aws_proxy


@pytest.fixture
def ec2(aws_env, moto_port):
    import boto3

    return boto3.client("ec2", region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{moto_port}")


@pytest.fixture(scope="session")
def public_key(tmp_path_factory):
    key = tmp_path_factory.mktemp("ssh") / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "tfprov-test", "-f", str(key)], check=True)
    return str(key) + ".pub"


@pytest.fixture(scope="session")
def image(moto_port):
    import boto3

    ec2 = boto3.client("ec2", region_name="us-east-1", endpoint_url=f"http://127.0.0.1:{moto_port}",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    return ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]


@pytest.fixture
def write_spec(tmp_path, public_key, image):
    def write(name, **changes):
        spec = {"name": name, "provider": "aws", "region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"],
                "image": image, "disk_gb": 30, "ssh": {"user": "admin", "public_key": public_key},
                "operator_cidr": "203.0.113.7/32",
                "roles": {"chief": {"count": 1, "type": "g4dn.xlarge"}, "worker": {"count": 2, "type": "g4dn.xlarge"},
                          "ps": {"count": 1, "type": "m5.xlarge"}}}
        spec.update(changes)
        path = tmp_path / f"{name}.yml"
        path.write_text(yaml.safe_dump(spec))
        return str(path)
    return write
