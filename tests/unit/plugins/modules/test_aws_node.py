"""tfprov.gpu.aws_node's RunInstances arguments (the calls themselves run against moto in tests/cloud)."""

from ansible_collections.tfprov.gpu.plugins.modules import aws_node

PARAMS = {"tags": {"team": "ml"}, "name": "demo-worker-0", "cluster": "demo", "role": "worker", "image": "ami-0123abcd",
          "instance_type": "g4dn.xlarge", "key_name": "tfprov-demo", "root_device_name": "/dev/xvda", "disk_gb": 100,
          "security_group_ids": ["sg-1"], "spot": False}


def test_every_instance_requires_imdsv2_and_encrypts_its_root_volume():
    spec = aws_node.launch_spec(PARAMS, "us-east-1a", "subnet-1", "t0k3n")
    assert spec["MetadataOptions"]["HttpTokens"] == "required"
    assert spec["MetadataOptions"]["HttpPutResponseHopLimit"] == 2
    assert spec["BlockDeviceMappings"][0]["Ebs"]["Encrypted"] is True


def test_the_idempotency_token_is_one_per_node_and_zone_and_fits_ec2s_limit():
    a = aws_node.launch_spec(PARAMS, "us-east-1a", "subnet-1", "t0k3n")["ClientToken"]
    assert a == aws_node.launch_spec(PARAMS, "us-east-1a", "subnet-1", "t0k3n")["ClientToken"]  # a retry: same
    assert a != aws_node.launch_spec(PARAMS, "us-east-1b", "subnet-2", "t0k3n")["ClientToken"]  # next zone: new
    long_name = dict(PARAMS, name="n" * 80)
    tokens = {aws_node.launch_spec(long_name, zone, None, "t0k3n")["ClientToken"]
              for zone in ("us-east-1a", "us-east-1b")}
    assert len(tokens) == 2 and all(len(token) <= 64 for token in tokens)
