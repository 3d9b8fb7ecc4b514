#!/usr/bin/env bash
# The built collection must install from its tarball and load its plugins from there, not from this checkout.
set -euo pipefail
tarball=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"  # away from the checkout's ansible.cfg, which links the checkout as the collection
ansible-galaxy collection install --force --no-deps -p "$tmp" "$tarball" >/dev/null
installed="$tmp/ansible_collections/tfprov/gpu/plugins"
for plugin in "module tfprov.gpu.preflight_facts" "module tfprov.gpu.nvidia_gpu_facts" "module tfprov.gpu.cuda_libs_facts" \
    "module tfprov.gpu.dist_job_status" "inventory tfprov.gpu.docker_containers" "connection tfprov.gpu.docker_exec"; do
  set -- $plugin
  ANSIBLE_COLLECTIONS_PATH=$tmp ansible-doc -t "$1" "$2" 2>&1 | grep -q "$installed" \
    || { echo "$2 does not load from the installed tarball" >&2; exit 1; }
done
# Files the roles run on nodes from the collection itself (the built-in distributed check is bench/dist_check.py).
for file in bench/dist_check.py roles/tensorflow_gpu/files/gpu_check.py roles/dist_tf_cluster/files/tf_server.py playbooks/cluster.yml; do
  [ -f "$tmp/ansible_collections/tfprov/gpu/$file" ] || { echo "$file is missing from the tarball" >&2; exit 1; }
done
# The benchmarks' drivers are run from a checkout (galaxy.yml's build_ignore): not in the collection.
if ls "$tmp/ansible_collections/tfprov/gpu/bench/" | grep -qvxE 'dist_check.py|allreduce_local.py|README.md|RESULTS.md'; then
  echo "bench/ in the tarball has more than the collection runs on nodes: $(ls "$tmp/ansible_collections/tfprov/gpu/bench/")" >&2
  exit 1
fi
echo "collection tarball installs and its plugins load: $(basename "$tarball")"
