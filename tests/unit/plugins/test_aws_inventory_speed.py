"""tfprov.gpu.aws_ec2's faster host-var preparation gives exactly amazon.aws.aws_ec2's host vars."""

import copy

import pytest
from ansible_collections.amazon.aws.plugins.inventory.aws_ec2 import _prepare_host_vars as stock_prepare
from ansible_collections.tfprov.gpu.plugins.inventory.aws_ec2 import prepare_host_vars

# The shape of one describe_instances instance (moto's), with the keys that have nested dicts, lists and Tags.
INSTANCE = {
    "InstanceId": "i-0abc", "InstanceType": "p4d.24xlarge", "PrivateIpAddress": "10.0.0.5",
    "Placement": {"AvailabilityZone": "us-east-1b", "GroupName": "", "Tenancy": "default"},
    "Tags": [{"Key": "tfprov:cluster", "Value": "demo"}, {"Key": "CamelKey", "Value": "v"}],
    "NetworkInterfaces": [{"NetworkInterfaceId": "eni-1", "PrivateIpAddresses": [{"Primary": True}],
                           "TagSet": [{"Key": "KeepCase", "Value": "x"}], "Groups": [[{"GroupId": "sg-1"}]]}],
    "BlockDeviceMappings": [{"DeviceName": "/dev/sda1", "Ebs": {"VolumeId": "vol-1", "DeleteOnTermination": True}}],
    "SecurityGroupARNs": ["arn:1"], "EbsOptimized": False, "StateReason": {"Code": "x", "Message": "y"},
}


@pytest.mark.parametrize("options", [(None, None, False), ("ec2_", None, False), (None, "_aws", True),
                                     ("p_", "_s", True)])
def test_prepared_host_vars_equal_the_stock_ones_in_content_and_order(options):
    ours = prepare_host_vars(copy.deepcopy(INSTANCE), *options)
    stock = stock_prepare(copy.deepcopy(INSTANCE), *options)
    assert ours == stock and list(ours) == list(stock)
    assert (options[0] or "") + "security_group_arns" + (options[1] or "") in ours


def test_the_documentation_parses_and_raw_hostvars_defaults_to_all():
    import yaml
    from ansible_collections.tfprov.gpu.plugins.inventory import aws_ec2

    options = yaml.safe_load(aws_ec2.DOCUMENTATION)["options"]
    assert options["raw_hostvars"]["default"] == [] and options["hostvars_prefix"]["type"] == "str"
