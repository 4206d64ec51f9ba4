#!/usr/bin/env bash
# Scenario 5: a process that uses no GPU. With the plugin loaded (inert without a mock root, and
# active with one) dump and restore behave exactly as without it: no amdgpu images, no plugin
# warnings or errors, the same checksum.
source "$(dirname "$0")/lib.sh"
EXPECTED=$("$BUILD_DIR/tests/e2e/e2e-cpu-workload" --steps 15 --step-ms 0 | awk '/^checksum/{print $2}')
ROOT=$(make_machine machine --gpus 1)
EMPTY="$WORK/no-plugins"; mkdir -p "$EMPTY"

check_restored() { # NAME PID: nothing of the plugin above debug level in either log
    for log in dump restore; do
        if grep -E "^\([ 0-9.]+\) +(Error|Warn).*amdgpu" "$WORK/img-$1/$log.log"; then
            fail "$1: amdgpu error or warning in the $log log"
        fi
    done
}
run_cpu_case without-plugin "$EMPTY" -
note "no GPU (without-plugin): checksum $CASE_CHECKSUM"
run_cpu_case plugin-inert "$PLUGIN_DIR" - -u CRIU_AMDGPU_MOCK_ROOT
note "no GPU (plugin-inert): checksum $CASE_CHECKSUM"
run_cpu_case plugin-with-mock "$PLUGIN_DIR" - CRIU_AMDGPU_MOCK_ROOT="$ROOT"
note "no GPU (plugin-with-mock): checksum $CASE_CHECKSUM"
