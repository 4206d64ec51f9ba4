#!/usr/bin/env bash
# The release checks, the last stage of scripts/test.sh (scripts/test.sh --release runs only them):
#  1. the Debian packages built with Debian's flags (hardening, _FORTIFY_SOURCE, -O2), warnings
#     fatal (scripts/build-deb.sh --werror --no-lint), and linted beside steps 2 and 3; after
#     scripts/test.sh's normal suite, built with the same flags (scripts/debian-flags.sh), every
#     object is a ccache hit;
#  2. the packages installed on this machine, and e2e scenarios run against the installed files:
#     real criu is given no -L and finds the plugin in /usr/lib/criu, its default plugin directory;
#  3. with the packages still installed, a scenario of the build tree (criu -L build/lib/criu):
#     it uses the build tree's plugin and backends only, as every other e2e run does;
#  4. the packages are purged again, also when a step fails.
# Prints the seconds each step took. BUILD_DIR (default ./build) is the build tree of scripts/test.sh.
source "$(dirname "$0")/as-root.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-$PWD/build}
scripts/install-deps.sh >/dev/null
CRIU=$(scripts/get-criu.sh 2>/dev/null)
export CRIU
if [ ! -x "$BUILD_DIR/tests/e2e/e2e-cpu-workload" ]; then
    # Run alone (scripts/test.sh --release): build the e2e helpers the installed scenarios use.
    echo "== the e2e helpers (a Release build of $BUILD_DIR with the e2e tests only)"
    BUILD_TYPE=Release scripts/build.sh -DCRIU_AMDGPU_CRIU="$CRIU" -DCRIU_AMDGPU_TESTS=ON \
        -DCRIU_AMDGPU_TEST_DIRS=e2e -DCRIU_AMDGPU_WERROR=ON
fi

timed() { # NAME COMMAND...: runs the command, then prints how long it took
    local name=$1 t0=$SECONDS; shift
    echo "== $name"
    "$@"
    echo "== time: release: $name: $((SECONDS - t0)) s"
}

DEBS=()
package_build() {
    mapfile -t DEBS < <(scripts/build-deb.sh --werror --no-lint)
    printf '   %s\n' "${DEBS[@]##*/}" # build-deb.sh checked the version against project()
}

# lintian (30 s here) runs beside the install and the installed scenarios, which wait on criu and
# the workloads more than they use the CPUs; lint_wait fails the stage on any error or warning.
LINT_PID="" LINT_LOG=""
lint_start() {
    LINT_LOG=$(mktemp)
    lintian --fail-on error,warning "${DEBS[0]%/*}"/criu-amdgpu_*.changes >"$LINT_LOG" 2>&1 &
    LINT_PID=$!
}
lint_wait() {
    local status=0
    wait "$LINT_PID" || status=$?
    sed 's/^/   /' "$LINT_LOG"
    rm -f "$LINT_LOG"
    [ "$status" = 0 ] || { echo "lintian reports errors or warnings (above)" >&2; return 1; }
}

PACKAGES=(criu-amdgpu criu-amdgpu-mock)
purge() { DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${PACKAGES[@]}" >/dev/null 2>&1 || true; }
install_packages() {
    trap purge EXIT
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${DEBS[@]}" >/dev/null
    local stray
    stray=$(dpkg -L "${PACKAGES[@]}" | grep -E '^/usr/lib/criu/[^/]+\.so$' | grep -v '/amdgpu_plugin\.so$' || true)
    [ -z "$stray" ] || { echo "a backend sits beside the plugin, criu would load it: $stray" >&2; return 1; }
    man -w criu-amdgpu criu-amdgpu-options mockgpu-workload >/dev/null
    criu-amdgpu probe --json >/dev/null || [ $? = 2 ] # 2: no backend serves this machine (no GPU)
}

installed_scenarios() {
    for scenario in dump_restore leave_running multi_process remap no_gpu; do
        E2E_INSTALLED=1 bash "tests/e2e/scenario_$scenario.sh" | sed 's/^/   /'
    done
}

build_tree_beside_package() {
    bash tests/e2e/scenario_dump_restore.sh | sed 's/^/   /'
}

t0=$SECONDS
timed "Debian packages, Debian's flags, warnings fatal" package_build
lint_start
timed "installing the packages" install_packages
timed "e2e against the installed packages (criu without -L)" installed_scenarios
timed "e2e of the build tree (-L) with the packages installed" build_tree_beside_package
timed "lintian (begun after the packages were built)" lint_wait
timed "purging the packages" purge
trap - EXIT
echo "== release checks passed in $((SECONDS - t0)) s"
