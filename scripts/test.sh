#!/usr/bin/env bash
# Runs every test on a fresh Debian bookworm machine (CI runs this through .ci/run):
#  1. installs the dependencies and obtains the criu generations the tests run against (Debian's
#     real builds: experimental's criu 4.3 runs every e2e scenario, trixie's 4.1.1 and sid's 4.2.1
#     the core ones), and containerd with a registry for the Kubernetes scenarios;
#  2. the normal suite: a Release build with warnings fatal, then CTest (unit, loader, kfd, drm,
#     compat, e2e with real criu, zdtm: criu's own tests with and without the plugin, bench);
#  3. the sanitizer suite (--sanitize alone runs only this): clang ASan + UBSan in build-asan, the
#     whole suite (e2e on the first criu generation, with the ASan runtime preloaded into criu:
#     build-asan/sanitizer/criu) but the benchmarks, then each fuzz target from a
#     fixed seed for CRIU_AMDGPU_FUZZ_RUNS or CRIU_AMDGPU_FUZZ_SECONDS (label fuzz); the same build holds the fuzz targets. Then a TSan
#     build (build-tsan) of the tests whose code runs per-GPU threads;
#  After every ctest run, how many tests skipped and why; a skip that tests/expected-skips.txt
#     lacks fails the run (scripts/check-skips.py).
#  4. the release checks (--release alone runs only this; scripts/test-release.sh): the Debian
#     packages built with Debian's flags and linted, installed, and tested with criu finding the
#     plugin in /usr/lib/criu by itself.
# Other arguments go to every ctest run.
#
#   scripts/test.sh [--sanitize | --release] [CTest arguments...]
source "$(dirname "$0")/as-root.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
stages=(normal sanitize release)
case "${1:-}" in
--sanitize) stages=(sanitize); shift ;;
--release) stages=(release); shift ;;
esac
scripts/install-deps.sh
CRIU=$(scripts/get-criu.sh experimental)
CRIU_MORE="$(scripts/get-criu.sh trixie);$(scripts/get-criu.sh sid)"
CONTAINERD_DIR=$(scripts/get-containerd.sh)
common=(-DCRIU_AMDGPU_CRIU="$CRIU" -DCRIU_AMDGPU_CRIU_MORE="$CRIU_MORE" -DCRIU_AMDGPU_TESTS=ON
        -DCRIU_AMDGPU_CONTAINERD_DIR="$CONTAINERD_DIR"
        -DCRIU_AMDGPU_TEST_DIRS= -DCRIU_AMDGPU_WERROR=ON)
export BUILD_DIR=${BUILD_DIR:-$PWD/build}

# ctest_checked DIR ARGS...: runs ctest in DIR, then prints how many tests skipped and why, and
# fails on a skip that tests/expected-skips.txt lacks (scripts/check-skips.py).
ctest_checked() {
    local dir=$1; shift
    ctest --test-dir "$dir" --output-junit "$dir/ctest-junit.xml" "$@"
    scripts/check-skips.py "$dir/ctest-junit.xml"
}

timed() { # NAME COMMAND...: runs the command, then says how long it took
    local name=$1 t0=$SECONDS; shift
    echo "== test.sh: $name"
    "$@"
    echo "== test.sh: $name passed in $((SECONDS - t0)) s"
}

normal_suite() {
    BUILD_TYPE=Release scripts/build.sh "${common[@]}"
    ctest_checked "$BUILD_DIR" --output-on-failure -j"$(nproc)" "$@"
}

sanitizer_suite() {
    local asan=${ASAN_BUILD_DIR:-$PWD/build-asan}
    # Report every sanitizer finding with a stack, and fail on it.
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    # The e2e scenarios run on one criu generation here (CRIU_AMDGPU_CRIU_MORE empty).
    CC=clang CXX=clang++ BUILD_DIR=$asan scripts/build.sh "${common[@]}" -DCRIU_AMDGPU_CRIU_MORE= \
        -DCRIU_AMDGPU_SANITIZE=address -DCRIU_AMDGPU_FUZZ_SECONDS="${CRIU_AMDGPU_FUZZ_SECONDS:-20}"
    # verify_asan_link_order=0: the fuzz targets load libstdc++ before the shared ASan runtime.
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:verify_asan_link_order=0} \
        ctest_checked "$asan" --output-on-failure -j"$(nproc)" -LE bench "$@"

    local tsan=${TSAN_BUILD_DIR:-$PWD/build-tsan}
    CC=clang CXX=clang++ BUILD_TARGETS="kfd_tests mock_tests mock mockgpu-workload" \
        BUILD_DIR=$tsan scripts/build.sh "${common[@]}" -DCRIU_AMDGPU_TEST_DIRS="kfd;mock" \
        -DCRIU_AMDGPU_SANITIZE=thread
    # The 256 MiB staging test measures memory, not threads, and takes minutes under TSan.
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
        ctest_checked "$tsan" --output-on-failure -j"$(nproc)" -E 'Given256MiB' "$@"
}

release_checks() {
    scripts/test-release.sh
}

t0=$SECONDS
for stage in "${stages[@]}"; do
    case "$stage" in
    normal) timed "normal suite" normal_suite "$@" ;;
    sanitize) timed "sanitizer suite" sanitizer_suite "$@" ;;
    release) timed "release checks" release_checks ;;
    esac
done
echo "== test.sh: all passed in $((SECONDS - t0)) s"
