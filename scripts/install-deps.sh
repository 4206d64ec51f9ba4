#!/usr/bin/env bash
# Installs everything the build and the tests need, from Debian bookworm's packages. Idempotent.
source "$(dirname "$0")/as-root.sh" "$@"
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git ccache mold
  libdrm-dev libprotobuf-c-dev protobuf-c-compiler libxxhash-dev libboost-dev libyaml-cpp-dev
  libcli11-dev nlohmann-json3-dev liblz4-dev libzstd-dev libgnutls28-dev libssl-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev gcovr
  util-linux procps xz-utils
  man-db debhelper lintian
  clang libclang-rt-14-dev llvm clang-format
  runc
  python3-grpcio
  # AMD's ROCm thunk (libhsakmt 5.2.3), run unmodified on the fake KFD by tests/thunk
  libhsakmt-dev
  # Mesa's RADV (Vulkan), run unmodified on the user-space driver's render node by
  # tests/kfd/driver/radv_test.sh (kfd_driver.radv)
  mesa-vulkan-drivers libvulkan-dev
  # criu's zdtm suite (tests/zdtm): its static tests, zdtm.py and the pycriu it generates
  libaio-dev libcap-dev libnl-3-dev libnl-route-3-dev protobuf-compiler libprotobuf-dev
  python3 python3-protobuf python3-yaml python3-junit.xml iproute2 iptables
)
# podman for the e2e scenarios of containers (with bookworm's runc; crun 1.8 cannot checkpoint).
# Without its recommendations: the scenarios need none (buildah, slirp4netns, fuse-overlayfs...).
lean_packages=(podman)
# missing PACKAGES...: those not installed.
missing() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(missing "${packages[@]}")
mapfile -t missing_lean < <(missing "${lean_packages[@]}")
if [ "${#missing[@]}" -gt 0 ] || [ "${#missing_lean[@]}" -gt 0 ]; then
  apt-get update -qq
fi
if [ "${#missing[@]}" -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ "${#missing_lean[@]}" -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing_lean[@]}" >/dev/null
fi
echo "build dependencies installed"
