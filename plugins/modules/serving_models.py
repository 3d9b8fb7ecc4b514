#!/usr/bin/python
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# Documentation only: the action plugin plugins/action/serving_models.py does the work on the controller.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: serving_models
short_description: Check TF Serving's models, release and ports before anything changes, or sync cloud models
version_added: 1.2.0
description:
  - Runs on the controller (action plugin); nothing is executed on the node.
  - Resolve (default) - the TF Serving release and image from the compatibility matrix (section C(tf_serving)),
    the network settings, and every model - its source listed (a local directory, C(gs://) through google-auth,
    C(s3://) through boto3) and checked before anything is downloaded - then one plan per model.
  - Refuses, with one line naming the model, path or port - no models; a name used twice or with other
    characters than letters, digits, C(.), C(_), C(-); a source scheme other than a local path, C(gs://),
    C(s3://); a local path that does not exist; no numeric version directory; a non-numeric version in
    a model's C(versions) or C(labels); a version directory without C(saved_model.pb); a specific
    version or label that the source does not have (or the policy does not serve); C(sync=false) for a scheme
    the release cannot read (S3, tensorflow/serving#1963); equal gRPC and REST ports; host networking without
    bind address C(0.0.0.0); a port held by another process than the serving container (from
    M(tfprov.gpu.listening_ports)); an unknown TF Serving version.
  - With O(sync_plans), makes the controller's cache an exact copy of each C(gs://) and C(s3://) model of those
    plans (downloads checked by size and md5); in check mode it only reports what would change.
author:
  - tfprov maintainers (@tfprov)
options:
  models:
    description: The role's C(tf_serving_models) - C(name), C(source), C(version_policy), C(versions), C(labels),
      C(sync), C(sample_input) (a C(:predict) body or a path to a JSON file on the controller).
    type: list
    elements: dict
  version:
    description: TF Serving version - empty for the newest, major.minor or exact.
    type: str
    default: ""
  image:
    description: Image to run; empty for C(<image_repository>:<version>[-gpu]) from the matrix.
    type: str
    default: ""
  gpu:
    description: Whether the node serves on GPUs (the C(-gpu) image).
    type: bool
    default: false
  network_mode:
    description: C(bridge) or C(host).
    type: str
  bind_address:
    description: Address the ports are published on.
    type: str
  grpc_port:
    description: gRPC port.
    type: int
  rest_port:
    description: REST port.
    type: int
  batching:
    description: Batching parameters (C(max_batch_size), C(batch_timeout_micros), C(num_batch_threads),
      C(max_enqueued_batches)); empty for none.
    type: dict
    default: {}
  listeners:
    description: C(listeners) of M(tfprov.gpu.listening_ports) on the node.
    type: list
    elements: dict
    default: []
  node:
    description: Name of the node, for messages.
    type: str
  models_dir:
    description: Node directory the synced models are copied to (for the plans' C(node_path), C(node_entries)).
    type: path
    default: /srv/tfprov/serving/models
  cache_dir:
    description: Controller directory for downloaded models.
    type: path
    default: ~/.cache/tfprov/models
  s3_endpoint_url:
    description: S3-compatible endpoint (tests, MinIO); empty for AWS.
    type: str
    default: ""
  gcs_endpoint:
    description: GCS JSON API endpoint (tests); empty for Google's.
    type: str
    default: ""
  gcs_anonymous:
    description: Read GCS without credentials (public buckets, local stubs).
    type: bool
    default: false
  sync_plans:
    description: The C(models) a resolve returned; when given, their cloud sources are synced instead.
    type: list
    elements: dict
attributes:
  check_mode:
    description: Resolving runs unchanged; syncing only reports what it would download or remove.
    support: full
notes:
  - Resolving never reports a change; syncing reports one when a file was downloaded or removed.
"""

EXAMPLES = r"""
- name: Check the models and ports
  tfprov.gpu.serving_models:
    models:
      - {name: digits, source: /srv/export/digits, version_policy: latest, versions: 2, labels: {stable: 1}}
      - {name: ranker, source: "s3://models/ranker"}
    network_mode: bridge
    bind_address: "{{ ansible_default_ipv4.address }}"
    grpc_port: 8500
    rest_port: 8501
    listeners: "{{ __ports.listeners }}"
    node: "{{ inventory_hostname }}"
  register: __serving
"""

RETURN = r"""
release:
  description: C(version), C(minor), C(image), C(filesystems) (schemes the release reads itself).
  returned: resolve
  type: dict
models:
  description: One plan per model - the normalized settings plus C(base_path) (in the container), C(available)
    and C(expected) versions, C(version_dirs), C(local_path) (controller directory to copy from), C(sample_input).
  returned: resolve
  type: list
  elements: dict
models_config:
  description: The text ModelServerConfig the plans give.
  returned: resolve
  type: str
synced:
  description: Per cloud model - C(downloaded), C(removed), C(unverified) relative paths.
  returned: sync
  type: list
  elements: dict
msg:
  description: The one-line refusal.
  returned: failure
  type: str
  sample: "model digits: no numeric version directory under /srv/export/digits (TF Serving would log 'No versions
    of servable digits found under base path')"
"""
