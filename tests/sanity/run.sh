#!/usr/bin/env bash
# ansible-test sanity on the collection as published: the tarball `ansible-galaxy collection build` makes (galaxy.yml's
# build_ignore leaves out the CLI in src/, its tests and fixtures in tests/, pyproject.toml, the Makefile), extracted to
# .tfprov/sanity/<core>/ansible_collections/tfprov/gpu with tests/config.yml and tests/sanity/ignore-*.txt copied in
# (tests/ is not in the tarball), and the dependencies' collections linked beside it from the venv's site-packages.
#
#   tests/sanity/run.sh [VENV] [ansible-test sanity options...]     (VENV: default .venv; make sanity SANITY_VENV=...)
#
# The venv's ansible-core runs every sanity test it has for a collection (23 on 2.19 and 2.21), each in a venv of its
# own that ansible-test makes (--venv, kept in ~/.ansible/test/venv) and fills from PyPI. The controller-side tests
# (validate-modules, pylint, pep8, ansible-doc, yamllint, ...) run on the venv's Python; compile and import run the
# modules and module_utils on each of the nodes' Pythons (tests/config.yml: python_requires) found here.
# Tests that find nothing to check here, and pass:
#   pslint     - PowerShell's linter: the collection has no PowerShell (and these machines no pwsh: a warning on 2.19).
#   shellcheck - the collection has no .sh file (its shell scripts are Jinja templates, which it does not read); where
#                one appears, ansible-test skips the test with a warning unless shellcheck is installed.
#   changelog  - for antsibull-changelog's fragments: the collection keeps CHANGELOG.md by hand.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
venv=${1:-.venv}
[ $# -gt 0 ] && shift
cd "$repo"
bin=$(cd "$venv/bin" 2>/dev/null && pwd) || { echo "sanity: no venv at $venv (make venv)" >&2; exit 1; }
py=$bin/python
core=$("$py" -c 'from ansible.release import __version__ as v; print(".".join(v.split(".")[:2]))')
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# ansible-test's pip bootstrap script, which it would download from a host these machines cannot reach: a stand-in,
# unless a file is already there (a real one, or the stand-in from an earlier run, then refreshed).
pipver=$("$py" - <<'PY'
import pathlib, re, ansible_test
text = (pathlib.Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py").read_text()
match = re.search(r"\bpip='([0-9.]+)'", text)
print(match.group(1) if match else "")
PY
)
if [ -n "$pipver" ]; then
  get_pip=$HOME/.ansible/test/cache/get_pip_${pipver//./_}.py
  mkdir -p "$(dirname "$get_pip")"
  if [ ! -e "$get_pip" ] || grep -q "A stand-in for the get-pip script" "$get_pip"; then
    cp tests/sanity/get_pip_stand_in.py "$get_pip"
  fi
fi

# The collection as published, in a fresh copy each run.
work=$repo/.tfprov/sanity/$core
root=$work/ansible_collections/tfprov/gpu
rm -rf "$work"
mkdir -p "$root" "$root/tests/sanity"
"$bin/ansible-galaxy" collection build --output-path "$work" "$repo" >/dev/null
tar -xzf "$work"/tfprov-gpu-*.tar.gz -C "$root"
rm "$work"/tfprov-gpu-*.tar.gz
cp tests/config.yml "$root/tests/"
cp tests/sanity/ignore-*.txt "$root/tests/sanity/" 2>/dev/null || true
# A Git repository of its own: ansible-test takes the nearest one above the collection for its list of files, and
# this checkout's ignores .tfprov/ (every target would be skipped).
git -C "$root" init -q && git -C "$root" add -A
# ansible-test's own output (2.19's delegation venv among it), which it would take for part of the collection.
echo /tests/output/ >> "$root/.git/info/exclude"

# The dependencies (validate-modules resolves their doc fragments, the import and pylint tests their module_utils):
# every collection of the venv's Ansible package, linked.
site=$("$py" -c 'import ansible_collections; print(list(ansible_collections.__path__)[0])' 2>/dev/null) || site=
if [ -n "$site" ]; then
  for dir in "$site"/*/*/; do
    dir=${dir%/}; ns=$(basename "$(dirname "$dir")"); name=$(basename "$dir")
    [ "$ns.$name" = tfprov.gpu ] && continue
    mkdir -p "$work/ansible_collections/$ns"
    ln -sfn "$dir" "$work/ansible_collections/$ns/$name"
  done
fi

# The nodes' Pythons (tests/config.yml: modules' python_requires) for the compile and import tests, which run the
# modules and module_utils on each one ansible-test supports and finds as pythonX.Y on PATH: a directory of links to
# the real interpreters found (the system's, pyenv's builds), ahead of pyenv's shims, which fail without PYENV_VERSION.
# A version not found here is skipped with a warning; the controller's tests run on the venv's Python.
pythons=$work/pythons
mkdir -p "$pythons"
found=()
for version in 3.9 3.10 3.11 3.12 3.13 3.14; do
  for candidate in "$(dirname "$(readlink -f "$py")")/python$version" /usr/bin/python$version \
      /usr/local/bin/python$version "${PYENV_ROOT:-$HOME/.pyenv}"/versions/$version.*/bin/python$version; do
    if [ -x "$candidate" ] && "$candidate" -c 'import ensurepip, venv' 2>/dev/null; then
      ln -sfn "$candidate" "$pythons/python$version"
      found+=("$version")
      break
    fi
  done
done

cd "$root"
start=$(date +%s)
echo "sanity: ansible-core $core, controller Python $pyver, the nodes' Pythons found: ${found[*]}; in $root"
rc=0
PATH=$pythons:$PATH "$bin/ansible-test" sanity --venv --color no "$@" || rc=$?
echo "sanity: ansible-core $core: $([ $rc = 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - start )) s"
exit $rc
