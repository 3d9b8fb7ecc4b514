"""Task names are rendered once per task with the first host's variables, not once per host: a name built from a
host's own value (its cluster task, its firewall) labels every host with the first one's ("ps:0" on all of them)."""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# Values that differ from host to host in a run.
PER_HOST = ("__dist_tf_cluster_task", "__dist_tf_cluster_task_name", "__dist_tf_cluster_firewall_kind",
            "__dist_tf_cluster_tf_host", "__dist_tf_cluster_tf_port", "inventory_hostname", "ansible_host")


def _names(tasks):
    for task in tasks or []:
        if isinstance(task, dict):
            yield task.get("name", "")
            for part in ("block", "rescue", "always"):
                yield from _names(task.get(part))


@pytest.mark.parametrize("path", sorted((ROOT / "roles").glob("*/tasks/*.yml")), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_task_name_is_built_from_a_per_host_value(path):
    for name in _names(yaml.safe_load(path.read_text())):
        assert not any(var in name for var in PER_HOST if "{{" in name), f"{path.name}: {name}"
