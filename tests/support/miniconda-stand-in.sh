#!/bin/sh
# Stand-in for a Miniconda installer, served by the molecule scenarios that test the conda path: Miniconda's batch
# interface (-b -p PREFIX, -u to update), its refusal of an existing prefix, and the files the roles rely on.
# Like the real installer it is a shell header with a payload: the payload is tests/support/conda_stand_in.py,
# appended after the marker line (`cat miniconda-stand-in.sh conda_stand_in.py`, as the scenarios' prepare does), and
# becomes PREFIX/bin/conda with the node's python3 in its #! line.
set -e
batch=0
update=0
prefix=
while [ $# -gt 0 ]; do
  case "$1" in
    -b) batch=1 ;;
    -p) prefix=$2; shift ;;
    -u) update=1 ;;
    *) echo "ERROR: did not recognize option '$1', please try -h" >&2; exit 1 ;;
  esac
  shift
done
[ "$batch" = 1 ] || { echo "stand-in: only batch mode (-b)" >&2; exit 2; }
[ -n "$prefix" ] || { echo "stand-in: -p PREFIX is required" >&2; exit 2; }
if [ -e "$prefix" ] && [ "$update" = 0 ]; then
  echo "ERROR: File or directory already exists: '$prefix'" >&2
  echo "If you want to update an existing installation, use the -u option." >&2
  exit 1
fi
python=$(command -v python3) || { echo "stand-in: its conda runs on the node's python3, which is missing" >&2; exit 1; }
marker=$(grep -n '^__TFPROV_CONDA_PAYLOAD__$' "$0" | cut -d: -f1)
[ -n "$marker" ] && [ "$(wc -l < "$0")" -gt "$marker" ] || { echo "stand-in: no conda payload in $0" >&2; exit 1; }
mkdir -p "$prefix/bin" "$prefix/etc/profile.d" "$prefix/conda-meta" "$prefix/envs"
: > "$prefix/conda-meta/history"
{ echo "#!$python"; tail -n "+$((marker + 2))" "$0"; } > "$prefix/bin/conda"
chmod 755 "$prefix/bin/conda"
printf 'conda() { "%s/bin/conda" "$@"; }\n' "$prefix" > "$prefix/etc/profile.d/conda.sh"
echo "installation finished."
exit 0
__TFPROV_CONDA_PAYLOAD__
