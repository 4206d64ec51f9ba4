#!/usr/bin/env bash
# A plugin that cannot set itself up breaks only the checkpoints that involve an AMD GPU. A
# process without GPU dumps and restores with a bad amdgpu option, with a mock root that holds no
# machine, and (criu 4.3+) among other plugins' --plugin-option entries and a bad one of ours;
# the plugin warns about the setting. A mock GPU process with a bad option fails to dump, with an
# error naming the option, and keeps running unpaused; fixed, it dumps; its restore where no GPU
# is configured fails and says why, and with the mock GPU it restores to the uninterrupted
# checksum.
source "$(dirname "$0")/lib.sh"
EXPECTED=$("$BUILD_DIR/tests/e2e/e2e-cpu-workload" --steps 15 --step-ms 0 | awk '/^checksum/{print $2}')
EMPTY_ROOT="$WORK/not-a-machine"
mkdir -p "$EMPTY_ROOT"

check_restored() { # NAME PID: a warning naming the setting, and no amdgpu error
    grep "Warn (amdgpu): " "$WORK/img-$1/dump.log" | grep -qF "$WANT_NAMED" ||
        fail "$1: no warning in the dump log names $WANT_NAMED"
    if grep -E "^\([ 0-9.]+\) +Error.*amdgpu" "$WORK/img-$1/dump.log" "$WORK/img-$1/restore.log"; then
        fail "$1: an amdgpu error for a process without GPU"
    fi
}
WANT_NAMED="env CRIU_AMDGPU_NUMA_CHECK"
run_cpu_case bad-option "$PLUGIN_DIR" - CRIU_AMDGPU_NUMA_CHECK=maybe
note "no GPU, bad option: checksum $CASE_CHECKSUM"
WANT_NAMED="mock-root = $EMPTY_ROOT (env CRIU_AMDGPU_MOCK_ROOT)"
run_cpu_case empty-mock-root "$PLUGIN_DIR" - CRIU_AMDGPU_MOCK_ROOT="$EMPTY_ROOT"
note "no GPU, mock root without a machine: checksum $CASE_CHECKSUM"
if "$CRIU" --help 2>&1 | grep -q -- '--plugin-option'; then
    WANT_NAMED="plugin option amdgpu.numa-check"
    CRIU_ARGS=(--plugin-option cuda_plugin.timeout=3 --plugin-option amdgpu.numa-check=maybe
               --plugin-option other_plugin.flag)
    run_cpu_case plugin-options "$PLUGIN_DIR" - -u CRIU_AMDGPU_MOCK_ROOT
    unset CRIU_ARGS
    note "no GPU, criu $CRIU_VERSION plugin options of others and a bad one of ours: checksum $CASE_CHECKSUM"
fi
unset -f check_restored

ROOT=$(make_machine machine --gpus 1)
ARGS=(--gpus 1 --buffers 2 --size 65536)
# It steps until the scenario is done with it: a fixed count of steps (25, 2.5 s) ran out under
# load before the second dump reached it (criu then found the process gone).
start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 \
    --steps 100000 --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 2/"
export CRIU_AMDGPU_MOCK_ROOT=$ROOT CRIU_AMDGPU_NUMA_CHECK=maybe
rc=0
criu_dump "$WORK/img-bad" "$WPID" || rc=$?
unset CRIU_AMDGPU_NUMA_CHECK
[ "$rc" -ne 0 ] || fail "the dump of a GPU process succeeded with a broken option"
grep -E "Error \(amdgpu\): amdgpu_plugin: cannot dump .*a mock GPU device under .*CRIU_AMDGPU_NUMA_CHECK" \
    "$WORK/img-bad/dump.log" >/dev/null || fail "the dump error does not name the device and the option"
kill -0 "$WPID" 2>/dev/null || fail "the GPU process died with the failed dump"
"$TOOL" mock status --root "$ROOT" | grep -q PAUSED && fail "GPU queues left paused"
note "GPU process, bad option: the dump failed naming it, the process runs on"

# The setting fixed, the dump works. A restore where nothing names the mock GPU fails and says
# why (the plugin loads its core because the images are amdgpu images); with it, it works.
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed with the setting fixed"
wait_gone "$WPID" 10
"$TOOL" mock reset --root "$ROOT" >/dev/null
unset CRIU_AMDGPU_MOCK_ROOT
"$CRIU" restore -D "$WORK/img" -L "$PLUGIN_DIR" -v4 -o restore-unconfigured.log -d &&
    fail "a GPU checkpoint restored where no GPU is configured"
grep -E "Error \(amdgpu\): amdgpu_plugin: file id [0-9]+ was an AMD GPU device \(renderD[0-9]+ of GPU 0x[0-9a-f]+\), and no backend can serve it here" \
    "$WORK/img/restore-unconfigured.log" >/dev/null || fail "the failed restore does not say why"
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
criu_restore "$WORK/img"
wait_for_next_step "$WORK/out.txt" workload
finish_stopped "$ROOT" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksum $GOT, expected $EXPECTED (an uninterrupted run of $STOPPED_AFTER steps)"
note "GPU process: restore without a GPU refused with the reason, then restored: checksum $GOT"
