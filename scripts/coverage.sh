#!/usr/bin/env bash
# Prints each backend's line coverage and fails when one is below the floor (default 90%).
#
#   scripts/coverage.sh [BUILD_DIR]        (CRIU_AMDGPU_COVERAGE_FLOOR=90)
#
# BUILD_DIR (default ./build) is a build configured with -DCRIU_AMDGPU_COVERAGE=ON whose tests
# have run (ctest), so that its .gcda files hold what they executed; this script builds and runs
# nothing. A clang build is read with `llvm-cov gcov`, a gcc build with gcov. Only backends/ is
# instrumented (the top CMakeLists.txt). CI runs it in the sanitizer stage of scripts/test.sh, on
# the ASan build after its tests (clang's counters, at the build's optimisation: clang counts lines
# before it optimises). By hand, a gcc build at -O0 of the backends' tests:
#   BUILD_DIR=build-cov BUILD_TYPE=Coverage BUILD_TARGETS="kfd_tests drm_tests \
#       drm_real_kernel_tests mock_tests sdma_tests frontend_session_test loader_tests" \
#       scripts/build.sh -DCRIU_AMDGPU_COVERAGE=ON -DCRIU_AMDGPU_TESTS=ON \
#       -DCRIU_AMDGPU_TEST_DIRS="kfd;drm;mock;sdma;frontend;loader"
#   ctest --test-dir build-cov -E '_NOT_BUILT$' && scripts/coverage.sh build-cov
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
floor=${CRIU_AMDGPU_COVERAGE_FLOOR:-90}
# The backends, each held to the floor; backends/common (the SDMA engine both hardware backends
# use) is shown beside them but not held: its real_libdrm.cpp runs only on a GPU.
backends=(backends/kfd backends/amdgpu-drm backends/mock)
shown=(backends/common)
# Not counted: the KFD backend's client of the user-space KFD driver (tests/kfd/DRIVER.md, option
# kfd-driver), whose tests (tests/kfd/driver: a preloaded library, which sanitizers refuse) are
# not built in the sanitizer build this script reads; they run in every other stage.
excluded="backends/kfd/src/driver_kernel.cpp backends/kfd/src/driver_libdrm.cpp
backends/kfd/src/driver_link.cpp backends/kfd/src/driver_protocol.cpp"

if ! grep -q '^CRIU_AMDGPU_COVERAGE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "coverage.sh: $build is not a build configured with -DCRIU_AMDGPU_COVERAGE=ON" >&2
  exit 2
fi
if [ -z "$(find "$build" -name '*.gcda' -print -quit)" ]; then
  echo "coverage.sh: no .gcda file in $build: run its tests first (ctest --test-dir $build)" >&2
  exit 2
fi
gcov=gcov
if grep -q '^CMAKE_CXX_COMPILER:.*clang' "$build/CMakeCache.txt"; then
  gcov="llvm-cov gcov"
fi

summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
# One pass over the build; the sources of each backend are summed below.
gcovr --root . --object-directory "$build" --gcov-executable "$gcov" \
  --filter 'backends/' --exclude-unreachable-branches --json-summary "$summary" >/dev/null

python3 - "$summary" "$floor" "${shown[*]}" "$excluded" "${backends[@]}" <<'PY'
import json, sys
summary, floor, shown, excluded = sys.argv[1], float(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
backends = sys.argv[5:]
files = [f for f in json.load(open(summary))["files"] if f["filename"] not in excluded]
below = []
print(f"line coverage of each backend (floor {floor:g}%):")
for backend in backends + shown:
    mine = [f for f in files if f["filename"].startswith(backend + "/")]
    covered = sum(f["line_covered"] for f in mine)
    total = sum(f["line_total"] for f in mine)
    if total == 0:
        print(f"  {backend:22} no line measured (not built, or its tests did not run)")
        if backend not in shown:
            below.append(backend)
        continue
    percent = 100.0 * covered / total
    held = backend not in shown
    print(f"  {backend:22} {percent:5.1f}%  ({covered} of {total} lines, {len(mine)} files)"
          + ("" if held else "  (shown, not held to the floor)"))
    if held and percent < floor:
        below.append(backend)
if below:
    print("below the floor: " + ", ".join(below))
    sys.exit(1)
PY
