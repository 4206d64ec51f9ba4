#!/usr/bin/env bash
# Obtain a criu that runs on this machine (see ../shared/docs/running-criu.md), without changing
# anything on the system, and print the path of a wrapper script that runs it.
#
#   scripts/get-criu.sh [SUITE [DEST]]
#
# SUITE is the Debian suite whose criu to take: trixie (the default: criu 4.1.1), sid (4.2.1) or
# experimental (4.3). Bookworm's criu 3.17 fails on Linux 6.x, and the newer ones need a newer
# glibc and newer libraries than bookworm has, so criu, libcompel1 and their whole library closure
# are downloaded from that suite through a private apt configuration, unpacked into DEST/root, and
# started through that root's own dynamic loader with only that root's libraries.
# DEST defaults to $GET_CRIU_DIR, else /opt/criu-amdgpu/criu for trixie and
# /opt/criu-amdgpu/criu-SUITE for the others. Run again, it reuses what is there.
set -euo pipefail

suite=${1:-trixie}
case "$suite" in
  trixie) default_dest=/opt/criu-amdgpu/criu ;;
  sid|unstable) suite=sid; default_dest=/opt/criu-amdgpu/criu-sid ;;
  experimental) default_dest=/opt/criu-amdgpu/criu-experimental ;;
  *) echo "get-criu.sh: unknown suite '$suite': use trixie, sid or experimental" >&2; exit 2 ;;
esac
dest=${2:-${GET_CRIU_DIR:-$default_dest}}
wrapper="$dest/criu"
if [ -x "$wrapper" ] && [ "$(cat "$dest/suite" 2>/dev/null || echo trixie)" = "$suite" ] &&
   "$wrapper" --version >/dev/null 2>&1; then
  echo "$wrapper"
  exit 0
fi

rm -rf "$dest/root" "$dest/debs"
mkdir -p "$dest/apt/lists/partial" "$dest/apt/cache/archives/partial" "$dest/debs" "$dest/root"
# experimental holds only what differs from sid: criu's libraries come from sid.
{
  echo "deb http://deb.debian.org/debian $suite main"
  if [ "$suite" = experimental ]; then echo "deb http://deb.debian.org/debian sid main"; fi
} > "$dest/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$dest/apt/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
          -o "Dir::State::Lists=$dest/apt/lists" -o "Dir::Cache=$dest/apt/cache"
          -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
apt-get "${apt_opts[@]}" update -qq >&2

# The closure of criu's run-time dependencies in that suite (virtual packages, shown as <name>,
# are provided by real ones that the list also holds). criu and libcompel1 are named with the
# suite: under experimental the sid versions would otherwise be the candidates.
mapfile -t closure < <(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests \
    --no-conflicts --no-breaks --no-replaces --no-enhances "criu/$suite" |
  grep -E '^[a-z0-9]' | grep -vxE 'criu|libcompel1' | sort -u)
(cd "$dest/debs" && apt-get "${apt_opts[@]}" download "criu/$suite" "libcompel1/$suite" \
    "${closure[@]}" >&2)
for deb in "$dest"/debs/*.deb; do dpkg -x "$deb" "$dest/root"; done
echo "$suite" > "$dest/suite"

priv="$dest/root"
# CRIU_FAULT=130 is criu's FI_NO_BREAKPOINTS: compel then follows the parasite's exit by tracing
# syscalls instead of with an x86 debug-register breakpoint. In the VMs this project runs on the
# breakpoint never fires with criu 4.1.1, the task runs away from criu and every dump fails with
# "Can't stop daemon in parasite"; the syscall path works everywhere. A caller may set CRIU_FAULT.
cat > "$wrapper" <<WRAP
#!/bin/sh
export CRIU_FAULT="\${CRIU_FAULT-130}"
exec "$priv/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$priv/usr/lib/x86_64-linux-gnu:$priv/lib/x86_64-linux-gnu" "$priv/usr/sbin/criu" "\$@"
WRAP
chmod +x "$wrapper"
"$wrapper" --version >&2
echo "$wrapper"
