#!/usr/bin/env bash
# Runs every test on a fresh Debian bookworm machine: installs the dependencies, obtains a criu
# that runs here, builds, and runs CTest (unit, loader, kfd, drm, e2e with real criu, bench).
source "$(dirname "$0")/as-root.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
CRIU=$(scripts/get-criu.sh)
export BUILD_DIR=${BUILD_DIR:-$PWD/build}
scripts/build.sh -DCRIU_AMDGPU_CRIU="$CRIU" -DCRIU_AMDGPU_TESTS=ON -DCRIU_AMDGPU_TEST_DIRS= -DCRIU_AMDGPU_WERROR=ON
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" "$@"
