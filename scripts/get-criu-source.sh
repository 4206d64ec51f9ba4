#!/usr/bin/env bash
# Obtains CRIU's own amdgpu plugin schema from Debian's criu source, for the conformance tests
# (ctest -L compat): for each Debian suite named (default: trixie sid), `apt-get source
# --download-only criu/SUITE` through a private deb-src list (nothing on the system changes),
# then plugins/amdgpu/criu-amdgpu.proto and images/img-streamer.proto are taken out of the
# orig tarball. apt may fail on a .dsc that answers 404 while the orig tarball downloads; only
# the tarball is needed. Nothing of it goes into the repository. With --tree, the whole source
# is unpacked as well, into DEST/SUITE/tree (criu's zdtm suite: tests/zdtm).
#
# Usage: get-criu-source.sh [--tree] [DEST [SUITE...]]   (DEST defaults to GET_CRIU_SRC_DIR,
#        then /opt/criu-amdgpu/criu-src). Prints DEST; DEST/SUITE/{criu-amdgpu.proto,
#        img-streamer.proto,VERSION} (and with --tree DEST/SUITE/tree) exist afterwards, or the
#        script fails saying why.
set -euo pipefail

tree=0
if [ "${1:-}" = --tree ]; then
  tree=1
  shift
fi
dest=${1:-${GET_CRIU_SRC_DIR:-/opt/criu-amdgpu/criu-src}}
shift || true
suites=("$@")
[ "${#suites[@]}" -gt 0 ] || suites=(trixie sid)

have() {
  [ -s "$dest/$1/criu-amdgpu.proto" ] && [ -s "$dest/$1/img-streamer.proto" ] && [ -s "$dest/$1/VERSION" ] &&
    { [ "$tree" = 0 ] || [ -f "$dest/$1/tree/Makefile" ]; }
}
missing=()
for s in "${suites[@]}"; do have "$s" || missing+=("$s"); done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "$dest"
  exit 0
fi

apt_dir="$dest/apt"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
: > "$apt_dir/sources.list"
for s in "${missing[@]}"; do
  echo "deb-src http://deb.debian.org/debian $s main" >> "$apt_dir/sources.list"
done
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
          -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
apt-get "${apt_opts[@]}" update -qq >&2

for s in "${missing[@]}"; do
  work="$dest/$s/download"
  rm -rf "$work"
  mkdir -p "$work"
  (cd "$work" && apt-get "${apt_opts[@]}" source --download-only "criu/$s" >&2) ||
    echo "get-criu-source: apt-get source criu/$s failed; looking for its orig tarball anyway" >&2
  tarball=$(ls "$work"/criu_*.orig.tar.* 2>/dev/null | head -n1 || true)
  if [ -z "$tarball" ]; then
    echo "get-criu-source: no criu orig tarball for $s from deb.debian.org" >&2
    exit 1
  fi
  version=$(basename "$tarball" | sed -e 's/^criu_//' -e 's/\.orig\.tar\..*$//')
  for f in plugins/amdgpu/criu-amdgpu.proto images/img-streamer.proto; do
    member=$(tar -tf "$tarball" | grep -m1 "^[^/]*/$f\$" || true)
    if [ -z "$member" ]; then
      echo "get-criu-source: $(basename "$tarball") has no $f" >&2
      exit 1
    fi
    tar -xOf "$tarball" "$member" > "$dest/$s/$(basename "$f")"
  done
  if [ "$tree" = 1 ]; then
    rm -rf "$dest/$s/tree"
    mkdir -p "$dest/$s/tree"
    tar -xf "$tarball" -C "$dest/$s/tree" --strip-components=1
  fi
  echo "$version" > "$dest/$s/VERSION"
  rm -rf "$work"
  echo "get-criu-source: $s: criu $version" >&2
done
rm -rf "$apt_dir"
echo "$dest"
