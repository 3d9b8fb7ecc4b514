"""Per-cluster inventories: `tfprov up aws|gcp` writes `.tfprov/inventories/<cluster>.<plugin>.yml` from the shipped
file, narrowed to the spec's region (AWS) or project (GCP) and to the cluster's own tag or label, with a cache of
its own; `down` removes it. Two clusters in one account then never share a group (the shipped files list every
tfprov cluster of their regions or projects), and `up`/`down` clear the very caches the inventories read (the
shipped GCP file caches under the user's cache directory, not in the checkout).
"""

from __future__ import annotations

from pathlib import Path

import yaml

SHIPPED = {"aws": "inventories/aws.aws_ec2.yml", "gcp": "inventories/gcp.gcp_compute.yml"}
PLUGIN_SUFFIX = {"aws": "aws_ec2.yml", "gcp": "gcp_compute.yml"}  # the plugins only read files so named
DIRECTORY = ".tfprov/inventories"


def path(root: Path, provider: str, cluster: str) -> Path:
    return root / DIRECTORY / f"{cluster}.{PLUGIN_SUFFIX[provider]}"


def narrowed(shipped: dict, spec: dict) -> dict:
    """The shipped inventory's settings for this cluster only."""
    config = dict(shipped)
    name = spec["name"]
    if spec["provider"] == "aws":
        filters = {key: value for key, value in (shipped.get("filters") or {}).items() if key != "tag-key"}
        config.update(regions=[spec["region"]], filters={**filters, "tag:tfprov:cluster": name})
    else:
        config.update(projects=[spec["project"]], filters=[f"labels.tfprov-cluster = {name}"])
    config["cache_prefix"] = f"{shipped.get('cache_prefix', 'tfprov')}_{name}_"
    return config


def write(root: Path, spec: dict) -> Path:
    provider = spec["provider"]
    shipped = yaml.safe_load((root / SHIPPED[provider]).read_text())
    target = path(root, provider, spec["name"])
    target.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Written by `tfprov up {provider}` for cluster {spec['name']} from {SHIPPED[provider]}; "
              "`tfprov down` removes it.\n")
    target.write_text(header + yaml.safe_dump(narrowed(shipped, spec), sort_keys=False))
    return target


def remove(root: Path, provider: str, cluster: str) -> None:
    path(root, provider, cluster).unlink(missing_ok=True)


def clear_caches(root: Path, provider: str) -> None:
    """Every cache file of the provider's inventories (the shipped one and each cluster's), where each one keeps it."""
    files = [root / SHIPPED[provider], *sorted((root / DIRECTORY).glob(f"*.{PLUGIN_SUFFIX[provider]}"))]
    for inventory in files:
        try:
            config = yaml.safe_load(inventory.read_text()) or {}
        except (OSError, yaml.YAMLError):
            continue
        if not config.get("cache_connection"):
            continue
        directory = Path(str(config["cache_connection"])).expanduser()
        directory = directory if directory.is_absolute() else root / directory  # relative: to the checkout
        for cached in directory.glob(f"{config.get('cache_prefix', '')}*"):
            if cached.is_file():
                cached.unlink(missing_ok=True)
