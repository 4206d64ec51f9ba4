#!/usr/bin/env bash
# Obtain a criu that runs on this machine (see ../shared/docs/running-criu.md):
# bookworm's criu 3.17 fails on Linux 6.x, so trixie's criu 4.1.1 is unpacked into a
# private folder and started through trixie's own dynamic loader. Nothing on the
# system is changed. Prints the path of a wrapper script that runs this criu.
set -euo pipefail

dest=${1:-${GET_CRIU_DIR:-/opt/criu-amdgpu/criu}}
wrapper="$dest/criu"
if [ -x "$wrapper" ] && "$wrapper" --version >/dev/null 2>&1; then
  echo "$wrapper"
  exit 0
fi

mkdir -p "$dest/apt/lists/partial" "$dest/apt/cache/archives/partial" "$dest/debs" "$dest/root"
cat > "$dest/apt/sources.list" <<LIST
deb http://deb.debian.org/debian trixie main
LIST
apt_opts=(-o "Dir::Etc::SourceList=$dest/apt/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
          -o "Dir::State::Lists=$dest/apt/lists" -o "Dir::Cache=$dest/apt/cache"
          -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1")
apt-get "${apt_opts[@]}" update -qq >&2
(cd "$dest/debs" && apt-get "${apt_opts[@]}" download criu libcompel1 libc6 >&2)
for deb in "$dest"/debs/*.deb; do dpkg -x "$deb" "$dest/root"; done

# Runtime libraries criu needs that come from bookworm.
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libprotobuf-c1 libnl-3-200 libnet1 \
    libnftables1 libgnutls30 libbsd0 libuuid1 iproute2 util-linux >&2
fi

priv="$dest/root"
# CRIU_FAULT=130 is criu's FI_NO_BREAKPOINTS: compel then follows the parasite's exit by tracing
# syscalls instead of with an x86 debug-register breakpoint. In the VMs this project runs on the
# breakpoint never fires, the task runs away from criu and every dump fails with "Can't stop
# daemon in parasite"; the syscall path works everywhere. A caller may set CRIU_FAULT itself.
cat > "$wrapper" <<WRAP
#!/bin/sh
export CRIU_FAULT="\${CRIU_FAULT-130}"
exec "$priv/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "$priv/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu" "$priv/usr/sbin/criu" "\$@"
WRAP
chmod +x "$wrapper"
"$wrapper" --version >&2
echo "$wrapper"
