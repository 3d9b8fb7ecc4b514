"""The inventory benchmark's choice of inventory file: the shipped one, or a copy keeping other raw host vars."""

import importlib.util
from pathlib import Path

import yaml

SPEC = importlib.util.spec_from_file_location("inventory_scale",
                                              Path(__file__).parents[3] / "bench" / "inventory_scale.py")
inventory_scale = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(inventory_scale)


def test_by_default_the_shipped_file_is_timed_and_keeps_what_the_playbooks_read(tmp_path):
    assert inventory_scale.inventory_file(tmp_path, None) == inventory_scale.INVENTORY
    kept = inventory_scale.raw_hostvars_kept(inventory_scale.INVENTORY)
    assert {"instance_id", "placement"} <= set(kept)  # bake_image.yml reads them


def test_a_copy_keeps_another_list_or_every_raw_var_and_the_rest_of_the_settings(tmp_path):
    shipped = yaml.safe_load(inventory_scale.INVENTORY.read_text())
    for wanted, reported in ((["tags"], ["tags"]), ([], "all")):
        copy = inventory_scale.inventory_file(tmp_path, wanted)
        assert copy.parent == tmp_path and copy.name.endswith(".aws_ec2.yml")  # the plugin's file names
        assert yaml.safe_load(copy.read_text()) == shipped | {"raw_hostvars": wanted}
        assert inventory_scale.raw_hostvars_kept(copy) == reported
