#!/usr/bin/env bash
# Scenario 5: a process that uses no GPU. With the plugin loaded (inert without a mock root, and
# active with one) dump and restore behave exactly as without it: no amdgpu images, no plugin
# warnings or errors, the same checksum.
source "$(dirname "$0")/lib.sh"
CPU="$BUILD_DIR/tests/e2e/e2e-cpu-workload"
EXPECTED=$("$CPU" --steps 15 --step-ms 0 | awk '/^checksum/{print $2}')
ROOT=$(make_machine machine --gpus 1)
EMPTY="$WORK/no-plugins"; mkdir -p "$EMPTY"

run_case() { # NAME PLUGIN_DIR [env...]
    local name=$1 dir=$2; shift 2
    rm -f "$WORK/result.txt"
    start_workload "$WORK/out-$name.txt" "$CPU" --steps 15 --step-ms 100 --result "$WORK/result.txt"
    wait_for_line "$WORK/out-$name.txt" "step 3/"
    mkdir -p "$WORK/img-$name"
    env "$@" "$CRIU" dump -t "$WPID" -D "$WORK/img-$name" -L "$dir" -v4 -o dump.log ||
        fail "$name: dump failed"
    wait_gone "$WPID" 10
    ls "$WORK/img-$name" | grep -q '^amdgpu-' && fail "$name: amdgpu images written for a process without GPU"
    grep -E "amdgpu" "$WORK/img-$name/dump.log" | grep -vE "^\([ 0-9.]+\) (amdgpu: |plugin: )|Plugin \"amdgpu_plugin\"" |
        grep -E "Error|Warn" && fail "$name: the plugin logged above debug level"
    env "$@" "$CRIU" restore -D "$WORK/img-$name" -L "$dir" -v4 -o restore.log -d --pidfile "$WORK/img-$name/pid" ||
        fail "$name: restore failed"
    wait_gone "$(cat "$WORK/img-$name/pid")" 60
    local got; got=$(checksum_of "$WORK/result.txt")
    [ "$got" = "$EXPECTED" ] || fail "$name: checksum $got, expected $EXPECTED"
    for log in dump restore; do
        if grep -E "^\([ 0-9.]+\) +(Error|Warn).*amdgpu" "$WORK/img-$name/$log.log"; then
            fail "$name: amdgpu error or warning in the $log log"
        fi
    done
    note "no GPU ($name): checksum $got"
}
run_case without-plugin "$EMPTY"
run_case plugin-inert "$PLUGIN_DIR" -u CRIU_AMDGPU_MOCK_ROOT
run_case plugin-with-mock "$PLUGIN_DIR" CRIU_AMDGPU_MOCK_ROOT="$ROOT"
