"""playbooks/bake_image.yml's image step (--tags image) for real against moto_server on 127.0.0.1: an instance made
with boto3, then the AMI made by ansible-playbook through AWS_ENDPOINT_URL with dummy keys. No real AWS."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.cloud

ROOT = Path(__file__).resolve().parents[2]
PORTS = range(25200, 25300)  # this test's own range: other moto tests use 25000-25099
PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
sys.path.insert(0, str(ROOT / "tests" / "support"))

import moto_server  # noqa: E402


@pytest.fixture(scope="module")
def moto(tmp_path_factory):
    port = moto_server.free_port(PORTS)
    try:
        proc = moto_server.start(port, tmp_path_factory.mktemp("moto") / "moto.log")
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield f"http://127.0.0.1:{port}"
    moto_server.stop(proc)


@pytest.fixture
def env(moto, tmp_path):
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "GCP_"))}
    return {**clean, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_ENDPOINT_URL": moto,
            "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp")}


@pytest.fixture
def ec2(moto):
    import boto3

    return boto3.client("ec2", region_name="us-east-1", endpoint_url=moto, aws_access_key_id="testing",
                        aws_secret_access_key="testing")


@pytest.fixture
def instance_id(ec2):
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    found = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="g4dn.xlarge",
                              TagSpecifications=[{"ResourceType": "instance",
                                                  "Tags": [{"Key": "tfprov:cluster", "Value": "bakeme"}]}])
    return found["Instances"][0]["InstanceId"]


def fake_env(tmp_path):
    """A TensorFlow environment as installed_stack reads it (pyvenv.cfg, a dist-info directory): the stand-in
    for a baked node's stack."""
    env = tmp_path / "env"
    (env / "lib" / "python3.11" / "site-packages" / "tensorflow_cpu-2.21.0.dist-info").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.2\n")
    return str(env)


def inventory(tmp_path, **host):
    # The "node" is this machine, reached locally: never moto's fake addresses.
    settings = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                "tfprov_tf_env": fake_env(tmp_path), "tfprov_cluster": "bakeme", **host}
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"children": {"tfprov_bake": {"hosts": {"bake-node": settings}}}}}))
    return str(path)


def bake(env, inv, *extra):
    proc = subprocess.run([str(PLAYBOOK), "-i", inv, "playbooks/bake_image.yml", "--tags", "image", *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    return proc.returncode, proc.stdout + proc.stderr


def images(ec2, name):
    return ec2.describe_images(Owners=["self"], Filters=[{"Name": "name", "Values": [name]}])["Images"]


def test_the_ami_is_made_from_the_instance_with_its_tags_and_a_second_run_keeps_it(tmp_path, env, ec2, instance_id):
    inv = inventory(tmp_path, tfprov_bake_provider="aws", tfprov_bake_instance_id=instance_id,
                    tfprov_bake_region="us-east-1")
    rc, out = bake(env, inv, "-e", "tfprov_bake_image_name=tfprov-bakeme-test")
    assert rc == 0, out[-3000:]
    found = images(ec2, "tfprov-bakeme-test")
    assert len(found) == 1
    tags = {tag["Key"]: tag["Value"] for tag in found[0].get("Tags", [])}
    assert tags["tfprov:image"] == "tfprov-bakeme-test"
    assert tags["tfprov:baked-from"] == "bake-node"
    assert tags["Name"] == "tfprov-bakeme-test"
    assert found[0]["ImageId"] in out  # the id is printed
    assert tags["tfprov:tensorflow"] == "2.21.0"
    assert tags["tfprov:python"] == "3.11.2"

    rc, out = bake(env, inv, "-e", "tfprov_bake_image_name=tfprov-bakeme-test")
    assert rc == 0, out[-3000:]
    assert "changed=0" in out.split("PLAY RECAP")[-1]
    assert len(images(ec2, "tfprov-bakeme-test")) == 1


def test_a_default_name_carries_the_cluster_and_a_time(tmp_path, env, ec2, instance_id):
    inv = inventory(tmp_path, tfprov_bake_provider="aws", tfprov_bake_instance_id=instance_id,
                    tfprov_bake_region="us-east-1")
    rc, out = bake(env, inv)
    assert rc == 0, out[-3000:]
    made = [image for image in ec2.describe_images(Owners=["self"])["Images"]
            if image["Name"].startswith("tfprov-bakeme-tf2-21-0-")]
    assert made and made[0]["ImageId"] in out


def test_a_node_without_its_cloud_is_refused_in_one_line_before_any_image(tmp_path, env, ec2):
    before = len(ec2.describe_images(Owners=["self"])["Images"])
    rc, out = bake(env, inventory(tmp_path))
    assert rc != 0
    assert "bake-node: set tfprov_bake_provider to aws or gcp" in out
    assert len(ec2.describe_images(Owners=["self"])["Images"]) == before


def test_an_instance_the_cloud_does_not_know_is_refused_before_any_image(tmp_path, env, ec2):
    before = len(ec2.describe_images(Owners=["self"])["Images"])
    inv = inventory(tmp_path, tfprov_bake_provider="aws", tfprov_bake_instance_id="i-0123456789abcdef0",
                    tfprov_bake_region="us-east-1")
    rc, out = bake(env, inv)
    assert rc != 0
    assert len(ec2.describe_images(Owners=["self"])["Images"]) == before
