#!/usr/bin/env bash
# Obtain containerd (with its CRI, what kubelet drives) and a container registry that run on this
# machine, without changing anything on the system, for the Kubernetes scenarios (tests/e2e/k8s_*).
#
#   scripts/get-containerd.sh [DEST]
#
# containerd 2.1 from Debian sid (CRI CheckpointContainer needs 2.0, the restore from a checkpoint
# image 2.1; bookworm's 1.6 has neither; sid's build needs glibc 2.34 only, so it runs on
# bookworm's libraries) and bookworm's docker-registry (restore pulls the container's base image,
# so a registry must serve it) are downloaded through a private apt configuration and unpacked
# into DEST/root. runc is bookworm's (scripts/install-deps.sh installs it). DEST defaults to
# $GET_CONTAINERD_DIR, else /opt/criu-amdgpu/containerd. Prints DEST; DEST/root/usr/bin holds
# containerd, containerd-shim-runc-v2, ctr and docker-registry. Run again, it reuses what is there.
set -euo pipefail

dest=${1:-${GET_CONTAINERD_DIR:-/opt/criu-amdgpu/containerd}}
bin=$dest/root/usr/bin
works() {
  "$bin/containerd" --version 2>/dev/null | grep -qE ' v?2\.[1-9]' &&
    [ -x "$bin/containerd-shim-runc-v2" ] && [ -x "$bin/ctr" ] && [ -x "$bin/docker-registry" ]
}
if works; then
  echo "$dest"
  exit 0
fi

rm -rf "$dest/root" "$dest/debs"
mkdir -p "$dest/apt/lists/partial" "$dest/apt/cache/archives/partial" "$dest/debs" "$dest/root"
{
  echo "deb http://deb.debian.org/debian sid main"
  echo "deb http://deb.debian.org/debian bookworm main"
} > "$dest/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$dest/apt/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
          -o "Dir::State::Lists=$dest/apt/lists" -o "Dir::Cache=$dest/apt/cache"
          -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
apt-get "${apt_opts[@]}" update -qq >&2
# Both are static Go programs but for libc: no library closure to bring along.
(cd "$dest/debs" && apt-get "${apt_opts[@]}" download containerd/sid docker-registry/bookworm >&2)
for deb in "$dest"/debs/*.deb; do dpkg -x "$deb" "$dest/root"; done
works || { echo "get-containerd.sh: $dest/root does not hold a working containerd 2.1+," \
  "containerd-shim-runc-v2, ctr and docker-registry: $(ls "$bin" 2>&1 | tr '\n' ' ')" >&2; exit 1; }
"$bin/containerd" --version >&2
echo "$dest"
