#!/usr/bin/env bash
# Parallel restore: with parallel-restore on, the restored task hands its BOs (the mock's dma-buf
# fds) to criu's main process, which fills them while criu restores the rest; the workload ends
# with the uninterrupted checksum. criu 4.1 has no POST_FORKING: the plugin says so and restores
# in the task. A fault in the worker fails the restore naming the GPU and the BO, and leaves
# nothing running and nothing on the GPU.
source "$(dirname "$0")/lib.sh"
two_gpu_workload 1048576 30
dump_at_step3
export CRIU_AMDGPU_PARALLEL_RESTORE=1

case "$CRIU_VERSION" in
    4.0* | 4.1*) parallel=0 ;;
    *) parallel=1 ;;
esac

if [ "$parallel" = 1 ]; then
    # A write fault in criu's main process: the restore must not leave the workload running.
    "$TOOL" mock reset --root "$ROOT" >/dev/null
    "$TOOL" mock fault --root "$ROOT" --op write-bo --at 2 >/dev/null
    rm -f "$WORK/img/restored.pid"
    "$CRIU" restore -D "$WORK/img" -L "$PLUGIN_DIR" -v4 -o restore-fault.log -d \
        --pidfile "$WORK/img/restored.pid" || true
    "$TOOL" mock fault --root "$ROOT" --clear >/dev/null
    log="$WORK/img/restore-fault.log"
    # -a: criu 4.2.1's log of this failed restore once held NUL bytes (a run beside long fuzz
    # runs), and grep then answers "binary file matches" instead of the lines.
    grep -aq "injected fault in write-bo" "$log" || fail "the worker's failure is not in criu's log"
    grep -aE "parallel restore" "$log" | grep -qE "of BO [0-9]+ \([0-9]+ bytes\) of GPU 0x[0-9a-f]+" ||
        fail "the worker's error does not name the GPU and the BO: $(grep -aE 'Error' "$log" | tail -3) ($(tr -cd '\000' <"$log" | wc -c) NUL bytes in the log)"
    sleep 0.3
    pgrep -f "mockgpu-workload --root $ROOT" >/dev/null && fail "a half-restored workload is running"
    "$TOOL" mock status --root "$ROOT" | grep -q "no open devices" ||
        fail "the failed parallel restore left GPU state behind: $("$TOOL" mock status --root "$ROOT")"
    cmp -s "$WORK/out.txt" "$WORK/out.at-dump" || fail "the failed restore ran the workload"
    note "a fault in criu's main process failed the restore cleanly, naming GPU and BO"
fi

"$TOOL" mock reset --root "$ROOT" >/dev/null
criu_restore "$WORK/img"
log="$WORK/img/restore.log"
if [ "$parallel" = 1 ]; then
    grep -q "parallel restore: the restored tasks hand BO contents to criu's main process" "$log" ||
        fail "parallel restore was not set up"
    [ "$(grep -c "handed to criu's main process" "$log")" = 2 ] ||
        fail "the task did not hand over both devices' BOs"
    grep -q "parallel restore: 2 job(s) done" "$log" || fail "criu's main process did not run both jobs"
    grep -qE "GPU 0x[0-9a-f]+ \(from 0x[0-9a-f]+, mock context [0-9]+\): BO contents restored: [0-9]+ bytes in" "$log" ||
        fail "no summary line of the restored contents"
    note "the task handed both devices' BOs to criu's main process"
else
    grep -q "parallel-restore needs criu's POST_FORKING hook (criu 4.2 or newer)" "$log" ||
        fail "criu $CRIU_VERSION: the plugin did not say why parallel restore is not used"
    grep -q "handed to criu's main process" "$log" && fail "criu $CRIU_VERSION has no POST_FORKING, yet contents were handed over"
    note "criu $CRIU_VERSION: restored in the task, and the plugin says why"
fi
wait_for_line "$WORK/out.txt" "^checksum " 120
GOT=$(checksum_of "$WORK/out.txt")
[ "$GOT" = "$EXPECTED" ] || fail "checksum after restore $GOT, uninterrupted run $EXPECTED"
note "parallel-restore: checksum $GOT matches the uninterrupted run"
