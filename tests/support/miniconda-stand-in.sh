#!/bin/sh
# Stand-in for a Miniconda installer, served by the miniconda role's test: Miniconda's batch interface
# (-b -p PREFIX) and the files the role relies on (bin/conda, etc/profile.d/conda.sh). It is not conda.
set -e
batch=0
prefix=
while [ $# -gt 0 ]; do
  case "$1" in
    -b) batch=1 ;;
    -p) prefix=$2; shift ;;
    -u) ;;
    *) echo "stand-in: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$batch" = 1 ] || { echo "stand-in: only batch mode (-b)" >&2; exit 2; }
[ -n "$prefix" ] || { echo "stand-in: -p PREFIX is required" >&2; exit 2; }
[ ! -e "$prefix/bin/conda" ] || { echo "stand-in: $prefix already exists" >&2; exit 1; }
mkdir -p "$prefix/bin" "$prefix/etc/profile.d" "$prefix/conda-meta"
printf '#!/bin/sh\necho "conda 24.7.1 (tfprov stand-in)"\n' > "$prefix/bin/conda"
chmod 755 "$prefix/bin/conda"
printf 'conda() { "%s/bin/conda" "$@"; }\n' "$prefix" > "$prefix/etc/profile.d/conda.sh"
echo "installation finished."
