from ansible_collections.tfprov.gpu.plugins.inventory.docker_containers import InventoryModule


def test_accepts_tfprov_and_stock_file_names_only(tmp_path):
    plugin = InventoryModule()
    for name, accepted in (("local.docker_containers.yml", True), ("x.docker_containers.yaml", True),
                           ("stock.docker.yml", True), ("hosts.yml", False), ("aws.aws_ec2.yml", False)):
        path = tmp_path / name
        path.write_text("plugin: tfprov.gpu.docker_containers\n")
        assert plugin.verify_file(str(path)) is accepted, name


def test_a_missing_file_is_not_accepted(tmp_path):
    assert not InventoryModule().verify_file(str(tmp_path / "local.docker_containers.yml"))
