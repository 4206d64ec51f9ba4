#!/usr/bin/env bash
# Installs everything the build and the tests need, from Debian bookworm's packages. Idempotent.
source "$(dirname "$0")/as-root.sh" "$@"
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git ccache
  libdrm-dev libprotobuf-c-dev protobuf-c-compiler libxxhash-dev libboost-dev libyaml-cpp-dev
  libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev gcovr
  util-linux procps xz-utils
  man-db debhelper lintian
  clang libclang-rt-14-dev llvm
  runc
  python3-grpcio python3-protobuf protobuf-compiler
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "build dependencies installed"
