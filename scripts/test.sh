#!/usr/bin/env bash
# Runs every test on a fresh Debian bookworm machine: installs the dependencies, obtains the criu
# generations the tests run against (Debian's real builds: experimental's criu 4.3 runs every e2e
# scenario, trixie's 4.1.1 and sid's 4.2.1 the core ones), builds, and runs CTest (unit, loader,
# kfd, drm, e2e with real criu, bench).
source "$(dirname "$0")/as-root.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
CRIU=$(scripts/get-criu.sh experimental)
CRIU_MORE="$(scripts/get-criu.sh trixie);$(scripts/get-criu.sh sid)"
export BUILD_DIR=${BUILD_DIR:-$PWD/build}
scripts/build.sh -DCRIU_AMDGPU_CRIU="$CRIU" -DCRIU_AMDGPU_CRIU_MORE="$CRIU_MORE" \
  -DCRIU_AMDGPU_TESTS=ON -DCRIU_AMDGPU_TEST_DIRS= -DCRIU_AMDGPU_WERROR=ON
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" "$@"
