"""The job spec of `tfprov job run --spec FILE`: a cluster spec (examples/cloud/ for aws and gcp; for local, the
container nodes' image and roles) and a `job:` section. Every refusal names the field to change, before anything is
created."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from .errors import TfprovError
from .local import cloud as local_cloud

PROVIDERS = ("local", "aws", "gcp")
STRATEGIES = ("multi_worker_mirrored", "parameter_server")
ROLE_ORDER = ("chief", "worker", "ps", "evaluator")
LOCAL_KEYS = {"name", "provider", "image", "roles", "job"}
JOB_KEYS = {"shared_dir", "strategy", "timeout"}
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,15}$")
DEFAULT_TIMEOUT = 3600


def load(path: str, root: Path) -> dict:
    """The checked spec: name, provider, job {shared_dir, strategy, timeout}; for local also cloud, image and
    node_roles (one per node, in index order); for aws / gcp also cloud_spec (the cluster spec without job:)."""
    spec_path = Path(path).expanduser()
    if not spec_path.is_file():
        raise TfprovError(f"--spec {path} does not exist: give your job spec (see examples/jobs/)")
    try:
        spec = yaml.safe_load(spec_path.read_text())
    except yaml.YAMLError as exc:
        raise TfprovError(f"job spec {path} is not YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(spec, dict):
        raise TfprovError(f"job spec {path} must be a mapping (name, provider, roles, job)")

    def refuse(text: str) -> TfprovError:
        return TfprovError(f"job spec {path}: {text}")

    provider = spec.get("provider")
    if provider not in PROVIDERS:
        raise refuse(f"provider {provider!r}: use {', '.join(PROVIDERS)}")
    name = spec.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise refuse(f"name {name!r}: use 1-16 lower-case letters, digits and '-', starting with a letter")
    job = spec.get("job") or {}
    if not isinstance(job, dict):
        raise refuse("job must be a mapping (shared_dir, strategy, timeout)")
    unknown = sorted(set(job) - JOB_KEYS)
    if unknown:
        raise refuse(f"job.{unknown[0]} is not a job setting: use {', '.join(sorted(JOB_KEYS))}")
    strategy = job.get("strategy", STRATEGIES[0])
    if strategy not in STRATEGIES:
        raise refuse(f"job.strategy {strategy!r}: use {' or '.join(STRATEGIES)}")
    timeout = job.get("timeout", DEFAULT_TIMEOUT)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout < 1:
        raise refuse(f"job.timeout {timeout!r}: give the job's longest run in seconds (a whole number)")
    _check_layout(spec.get("roles"), strategy, refuse)
    checked = {"name": name, "provider": provider,
               "job": {"shared_dir": _shared_dir(job.get("shared_dir"), provider, spec_path, refuse),
                       "strategy": strategy, "timeout": timeout}}
    if provider == "local":
        return checked | _local(spec, name, refuse)
    return checked | {"cloud_spec": {k: v for k, v in spec.items() if k != "job"}}


def _check_layout(roles, strategy: str, refuse) -> None:
    """Before any node exists: parameter_server needs a ps node; under multi_worker_mirrored a ps node would only
    idle (and cost) for the whole job."""
    counts = {role: entry.get("count") for role, entry in roles.items() if isinstance(entry, dict)} \
        if isinstance(roles, dict) else {}
    has_ps = isinstance(counts.get("ps"), int) and counts["ps"] > 0
    if strategy == "parameter_server" and not has_ps:
        raise refuse("job.strategy parameter_server needs roles.ps (count 1 or more): the variables live there")
    if strategy == "multi_worker_mirrored" and has_ps:
        raise refuse("roles.ps under multi_worker_mirrored: a ps node takes no part and would idle for the whole job; "
                     "remove it, or set job.strategy: parameter_server")


def _shared_dir(value, provider: str, spec_path: Path, refuse) -> str:
    """Local: a directory on this machine (relative to the spec), mounted in every node. A cloud: gs://, s3://, or a
    path every node shares (an NFS mount): the job's checkpoints must outlive any one node."""
    if provider == "local":
        if value is None:
            raise refuse("job.shared_dir is missing: give a directory on this machine for the checkpoints and "
                         "outputs (mounted in every node)")
        if not isinstance(value, str) or "://" in value:
            raise refuse(f"job.shared_dir {value!r}: the local cloud needs a directory on this machine")
        return str((spec_path.parent / Path(value).expanduser()).resolve())
    if not isinstance(value, str) or not re.match(r"^(gs://[^/]+|s3://[^/]+|/)", value):
        raise refuse(f"job.shared_dir {value!r}: give gs://bucket/prefix, s3://bucket/prefix or a path every node "
                     "shares (NFS): a checkpoint on one node's disk is lost with it")
    return value


def _local(spec: dict, name: str, refuse) -> dict:
    unknown = sorted(set(spec) - LOCAL_KEYS)
    if unknown:
        raise refuse(f"{unknown[0]} is not a local job spec setting: use {', '.join(sorted(LOCAL_KEYS))}")
    roles = spec.get("roles")
    if not isinstance(roles, dict) or not roles:
        raise refuse("roles is missing: e.g. {chief: {count: 1}, worker: {count: 2}}")
    node_roles = []
    for role in sorted(roles, key=lambda r: ROLE_ORDER.index(r) if r in ROLE_ORDER else len(ROLE_ORDER)):
        if role not in ROLE_ORDER:
            raise refuse(f"roles.{role} is not a cluster role: use {', '.join(ROLE_ORDER)}")
        entry = roles[role] if isinstance(roles[role], dict) else {}
        count = entry.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise refuse(f"roles.{role}.count {count!r}: give a whole number")
        node_roles += [role] * count
    if node_roles.count("chief") != 1:
        raise refuse(f"roles.chief.count is {node_roles.count('chief')}: a job has exactly one chief")
    image = spec.get("image")
    if image is not None and not isinstance(image, str):
        raise refuse(f"image {image!r}: give a local image name (a baked node: make baked-image)")
    return {"cloud": local_cloud.check_name(f"job-{name}"), "image": image,
            "node_roles": node_roles}
