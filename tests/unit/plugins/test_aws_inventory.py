"""tfprov.gpu.aws_ec2: the host vars and groups it adds to amazon.aws.aws_ec2's, from an instance's host vars."""

from ansible_collections.tfprov.gpu.plugins.inventory.aws_ec2 import InventoryModule, tfprov_vars


def host(**changes):
    base = {"instance_type": "p4d.24xlarge", "private_ip_address": "10.0.0.5", "public_ip_address": "54.0.0.5",
            "placement": {"availability_zone": "us-east-1b"}, "state": {"code": 16, "name": "running"},
            "tags": {"tfprov:cluster": "demo", "tfprov:role": "worker", "Name": "demo-worker-0",
                     "tfprov:tf-port": "2300", "tfprov:image": "tfprov-node-2026"}}
    base.update(changes)
    return base


def test_a_tfprov_instance_gets_the_group_contract_and_gpu_vars():
    variables, groups = tfprov_vars(host())
    assert groups == ["tfprov_nodes", "tfprov_worker", "gpu_a100", "gpu_a100_40gb"]
    assert variables == {
        "ansible_host": "54.0.0.5", "tfprov_cluster": "demo", "tfprov_node_role": "worker",
        "tfprov_node_state": "running",
        "tfprov_tf_address": "10.0.0.5", "tfprov_tf_port": 2300, "tfprov_zone": "us-east-1b",
        "tfprov_instance_type": "p4d.24xlarge", "tfprov_booted_from_image": "tfprov-node-2026",
        "tfprov_gpu_model": "a100_40gb", "tfprov_gpu_family": "a100", "tfprov_gpu_count": 8}


def test_a_cpu_instance_without_public_address_and_an_untagged_one():
    variables, groups = tfprov_vars(host(instance_type="m5.xlarge", public_ip_address=None,
                                         tags={"tfprov:cluster": "demo", "tfprov:role": "ps"}))
    assert groups == ["tfprov_nodes", "tfprov_ps"]
    assert (variables["ansible_host"], variables["tfprov_gpu_model"], variables["tfprov_gpu_count"]) == \
        ("10.0.0.5", "", 0)
    assert variables["tfprov_tf_port"] == 2222 and variables["tfprov_booted_from_image"] == ""
    assert tfprov_vars(host(tags={"Name": "someone-elses"})) is None


def test_a_stopped_or_stopping_instance_is_listed_as_stopped():
    for ec2_state, state in (("stopped", "stopped"), ("stopping", "stopped"), ("pending", "pending")):
        assert tfprov_vars(host(state={"code": 80, "name": ec2_state}))[0]["tfprov_node_state"] == state


def test_the_plugin_is_amazon_aws_ec2_under_tfprov_name():
    from ansible_collections.amazon.aws.plugins.inventory.aws_ec2 import InventoryModule as Stock

    assert issubclass(InventoryModule, Stock) and InventoryModule.NAME == "tfprov.gpu.aws_ec2"
    assert InventoryModule().verify_file.__func__ is Stock.verify_file  # same *.aws_ec2.yml file names
