#!/bin/bash
# Stand-in for NVIDIA's CUDA repository (unreachable here), for the molecule scenarios that run the repository's real
# path (dcgm, nvidia_repo): a flat apt repository in NVIDIA's layout, ROOT/repos/<distro>/x86_64/, signed by a
# throw-away key (InRelease), whose public half is served as NVIDIA's key file (3bf863cc.pub). The key's fingerprint
# goes to ROOT/fingerprint, for a scenario that trusts this stand-in on purpose; NVIDIA's own is refused.
#
# Usage: nvidia-repo-stand-in.sh ROOT DISTROS TREE...
#   ROOT     the directory to serve (the caller empties it first)
#   DISTROS  NVIDIA's distribution directories, comma-separated: debian12 (bookworm), debian13 (trixie)
#   TREE     a dpkg-deb tree (DEBIAN/control and the package's files): built once, indexed in every directory
set -e -o pipefail
[ $# -ge 3 ] || { echo "usage: $0 ROOT DISTROS TREE..." >&2; exit 2; }
root=$1 distros=$2
shift 2
export GNUPGHOME
GNUPGHOME=$(mktemp -d)
trap 'rm -rf "$GNUPGHOME"' EXIT
gpg --batch --passphrase '' --quick-gen-key 'tfprov stand-in repository <test@tfprov.invalid>' default default never \
  2>/dev/null
IFS=, read -r -a dirs <<< "$distros"
for distro in "${dirs[@]}"; do
  dir=$root/repos/$distro/x86_64
  mkdir -p "$dir"
  for tree in "$@"; do
    dpkg-deb --root-owner-group -b "$tree" "$dir/" >/dev/null
  done
  (
    cd "$dir"
    dpkg-scanpackages --multiversion . /dev/null 2>/dev/null > Packages
    { echo "Origin: tfprov stand-in"; echo "Label: tfprov stand-in"; echo "Date: $(date -Ru)"; echo "SHA256:";
      echo " $(sha256sum Packages | cut -d' ' -f1) $(stat -c %s Packages) Packages"; } > Release
    gpg --batch --yes --clearsign -o InRelease Release
    gpg --armor --export > 3bf863cc.pub
  )
done
gpg --with-colons --list-keys | awk -F: '$1 == "fpr" && !seen++ {print $10}' > "$root/fingerprint"
