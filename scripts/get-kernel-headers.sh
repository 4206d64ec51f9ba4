#!/usr/bin/env bash
# Obtain the Linux uapi headers of a Debian suite (package linux-libc-dev) without changing
# anything on the system, the way get-criu.sh obtains criu: a private apt configuration,
# `apt-get download`, `dpkg -x`. Prints the include directory (it holds linux/kfd_ioctl.h,
# drm/amdgpu_drm.h and drm/drm.h).
#
#   scripts/get-kernel-headers.sh [SUITE [DEST]]
#
# SUITE defaults to sid (linux-libc-dev 7.2 at the time of writing); DEST to $GET_HEADERS_DIR,
# else /opt/criu-amdgpu/linux-libc-dev-SUITE. Run again, it reuses what is there.
set -euo pipefail

suite=${1:-sid}
case "$suite" in
  sid|unstable) suite=sid ;;
  trixie|experimental|bookworm) ;;
  *) echo "get-kernel-headers.sh: unknown suite '$suite': use sid, experimental, trixie or bookworm" >&2
     exit 2 ;;
esac
dest=${2:-${GET_HEADERS_DIR:-/opt/criu-amdgpu/linux-libc-dev-$suite}}
include="$dest/root/usr/include"
if [ -f "$include/linux/kfd_ioctl.h" ] && [ -f "$include/drm/amdgpu_drm.h" ] &&
   [ "$(cat "$dest/suite" 2>/dev/null)" = "$suite" ]; then
  echo "$include"
  exit 0
fi

rm -rf "$dest/root" "$dest/debs"
mkdir -p "$dest/apt/lists/partial" "$dest/apt/cache/archives/partial" "$dest/debs" "$dest/root"
echo "deb http://deb.debian.org/debian $suite main" > "$dest/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$dest/apt/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
          -o "Dir::State::Lists=$dest/apt/lists" -o "Dir::Cache=$dest/apt/cache"
          -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
apt-get "${apt_opts[@]}" update -qq >&2
(cd "$dest/debs" && apt-get "${apt_opts[@]}" download "linux-libc-dev/$suite" >&2)
for deb in "$dest"/debs/*.deb; do dpkg -x "$deb" "$dest/root"; done
dpkg-deb -f "$dest"/debs/*.deb Version > "$dest/version"
echo "$suite" > "$dest/suite"
echo "linux-libc-dev $(cat "$dest/version") ($suite)" >&2
echo "$include"
