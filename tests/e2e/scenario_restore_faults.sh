#!/usr/bin/env bash
# A fault injected into each restore step in turn: criu's restore fails, no half-restored process
# is left running, and nothing the failed restore recreated stays on the GPU. The same images then
# restore cleanly and the workload finishes with the uninterrupted checksum.
source "$(dirname "$0")/lib.sh"
two_gpu_workload 65536 20
dump_at_step3

for op in restore write-bo resume; do
    "$TOOL" mock reset --root "$ROOT" >/dev/null
    "$TOOL" mock fault --root "$ROOT" --op "$op" --at 1 >/dev/null
    rm -f "$WORK/img/restored.pid"
    rc=0
    "$CRIU" restore -D "$WORK/img" -L "$PLUGIN_DIR" -v4 -o "restore-$op.log" -d \
        --pidfile "$WORK/img/restored.pid" || rc=$?
    "$TOOL" mock fault --root "$ROOT" --clear >/dev/null
    # criu ignores a failed RESUME_DEVICES_LATE and reports success; the plugin then stops the
    # task rather than leave it hanging on GPU queues that never resume.
    [ "$rc" -ne 0 ] || [ "$op" = resume ] || fail "$op: the restore succeeded despite the injected fault"
    grep -q "injected fault in $op" "$WORK/img/restore-$op.log" || fail "$op: criu's log does not name the failed step"
    sleep 0.3
    if pgrep -f "mockgpu-workload --root $ROOT" >/dev/null; then
        fail "$op: a half-restored workload is running"
    fi
    "$TOOL" mock status --root "$ROOT" | grep -q "no open devices" ||
        fail "$op: the failed restore left GPU state behind: $("$TOOL" mock status --root "$ROOT")"
    cmp -s "$WORK/out.txt" "$WORK/out.at-dump" || fail "$op: the failed restore ran the workload"
    note "$op fault: restore failed cleanly, nothing left running or allocated"
done

"$TOOL" mock reset --root "$ROOT" >/dev/null
criu_restore "$WORK/img"
wait_for_line "$WORK/out.txt" "^checksum " 120
GOT=$(checksum_of "$WORK/out.txt")
[ "$GOT" = "$EXPECTED" ] || fail "checksum after the failed restores $GOT, expected $EXPECTED"
note "the same images restored afterwards: checksum $GOT"
