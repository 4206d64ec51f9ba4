#!/usr/bin/env bash
# Runs every test on a fresh Debian bookworm machine: installs the dependencies, obtains a criu
# that runs here, builds, and runs CTest (unit, loader, kfd, drm, e2e with real criu, bench).
#
#   scripts/test.sh [--sanitize] [CTest arguments...]
#
# --sanitize runs the sanitizer configurations instead of the normal build:
#   1. ASan + UBSan (clang, build-asan): the whole suite, plus each fuzz target for
#      CRIU_AMDGPU_FUZZ_SECONDS (label fuzz). The same build holds the fuzz targets: it is built
#      once. The e2e scenarios (criu with the ASan runtime preloaded, build-asan/sanitizer/criu)
#      run only with CRIU_AMDGPU_SANITIZE_E2E=1: here trixie's criu with bookworm's ASan runtime
#      preloaded deadlocks in its exit handlers (libp11-kit's destructor, freelocale,
#      pthread_rwlock_wrlock), so they would hang, not test the plugin.
#   2. TSan (clang, build-tsan): the tests whose code runs per-GPU threads (kfd, mock), only
#      with CRIU_AMDGPU_SANITIZE_TSAN=1: clang 14's TSan runtime crashes at startup (SIGSEGV
#      before main, with ASLR off too) under the Linux 6.18 kernel of this project's machines.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=0
if [ "${1:-}" = "--sanitize" ]; then
  sanitize=1
  shift
fi
scripts/install-deps.sh
CRIU=$(scripts/get-criu.sh)
common=(-DCRIU_AMDGPU_CRIU="$CRIU" -DCRIU_AMDGPU_TESTS=ON)

if [ "$sanitize" = 0 ]; then
  export BUILD_DIR=${BUILD_DIR:-$PWD/build}
  scripts/build.sh "${common[@]}" -DCRIU_AMDGPU_TEST_DIRS=
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" "$@"
  exit 0
fi

export CC=clang CXX=clang++
# Report every sanitizer finding with a stack, and fail on it.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
asan=${ASAN_BUILD_DIR:-$PWD/build-asan}
BUILD_DIR=$asan scripts/build.sh "${common[@]}" -DCRIU_AMDGPU_TEST_DIRS= \
  -DCRIU_AMDGPU_SANITIZE=address -DCRIU_AMDGPU_FUZZ_SECONDS="${CRIU_AMDGPU_FUZZ_SECONDS:-20}"
# verify_asan_link_order=0: the fuzz targets load libstdc++ before the shared ASan runtime.
asan_filter=(-LE e2e)
[ "${CRIU_AMDGPU_SANITIZE_E2E:-0}" = 1 ] && asan_filter=()
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:verify_asan_link_order=0} \
  ctest --test-dir "$asan" --output-on-failure -j"$(nproc)" "${asan_filter[@]}" "$@"

[ "${CRIU_AMDGPU_SANITIZE_TSAN:-0}" = 1 ] || exit 0
tsan=${TSAN_BUILD_DIR:-$PWD/build-tsan}
BUILD_TARGETS="kfd_tests mock_tests mock mockgpu-workload" BUILD_DIR=$tsan scripts/build.sh \
  "${common[@]}" -DCRIU_AMDGPU_TEST_DIRS="kfd;mock" -DCRIU_AMDGPU_SANITIZE=thread
# The 256 MiB staging test measures memory, not threads, and takes minutes under TSan.
TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
  ctest --test-dir "$tsan" --output-on-failure -j"$(nproc)" -E 'Given256MiB' "$@"
