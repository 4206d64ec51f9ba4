#!/usr/bin/env bash
# The fd audit: criu runs with an audit plugin beside amdgpu_plugin.so that records criu's own fds
# when criu starts and when it has finished. For a dump, a restore, and every injected dump and
# restore fault: criu ends with none of the fds the plugin and its backends open (GPU device
# files, mock contexts, dma-bufs, amdgpu images) that it did not start with, the task keeps the
# fds it had (after a failed dump, and after the restore), and no GPU queue is left paused.
# criu's own fds change between start and end whatever the plugins do (a proc fd, a socket, the
# root directory; seen with the audit plugin alone): those are printed, not judged.
source "$(dirname "$0")/lib.sh"
use_fd_audit_plugin

two_gpu_workload 65536 300

# Targets of fds the plugin or its backends open.
GPU_FD='^[0-9]+ -> ('"$ROOT"'/|/dev/dri/|/dev/kfd|anon_inode:dmabuf|.*/amdgpu-[^/]*\.img)'

# audit_criu WHAT: no criu run since the last audit ended with a GPU fd it did not start with.
audit_criu() {
    local what=$1 runs=0 init
    for init in "$CRIU_FD_AUDIT_DIR"/criu-*.init; do
        [ -e "$init" ] || continue
        runs=$((runs + 1))
        local exit=${init%.init}.exit new
        [ -f "$exit" ] || fail "$what: criu ${init##*/criu-} recorded no fds at its end"
        new=$(comm -13 <(sort "$init") <(sort "$exit"))
        if grep -qE "$GPU_FD" <<<"$new"; then
            fail "$what: criu ended with GPU fds it did not start with:
$(grep -E "$GPU_FD" <<<"$new")"
        fi
        [ -z "$new" ] || note "$what: criu's own new fds at its end: $(tr '\n' ' ' <<<"$new")"
    done
    [ "$runs" -gt 0 ] || fail "$what: the audit plugin recorded no criu run (was it loaded?)"
    rm -f "$CRIU_FD_AUDIT_DIR"/criu-*
    note "$what: no GPU fd left open in criu ($runs run(s))"
}

# expect_unpaused WHAT
expect_unpaused() {
    sleep 0.3
    "$TOOL" mock status --root "$ROOT" | grep -q PAUSED && fail "$1: GPU queues left paused"
    return 0
}

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 50
wait_for_line "$WORK/out.txt" "step 2/"
FDS_BEFORE=$(fds_of "$WPID")

for op in pause checkpoint read-bo write-images; do
    "$TOOL" mock fault --root "$ROOT" --op "$op" --at 1 >/dev/null
    rc=0
    criu_dump "$WORK/img-$op" "$WPID" || rc=$?
    "$TOOL" mock fault --root "$ROOT" --clear >/dev/null
    [ "$rc" -ne 0 ] || fail "$op: the dump succeeded despite the injected fault"
    kill -0 "$WPID" 2>/dev/null || fail "$op: the process died with the failed dump"
    expect_unpaused "dump fault $op"
    audit_criu "dump fault $op"
    FDS_NOW=$(fds_of "$WPID")
    [ -n "$FDS_NOW" ] || fail "dump fault $op: the task has no fds left ($(ps -o pid,stat,cmd -p "$WPID" | tail -1); $(tail -2 "$WORK/out.txt"))"
    [ "$FDS_NOW" = "$FDS_BEFORE" ] || fail "dump fault $op: the task's fds changed:
$(diff <(echo "$FDS_BEFORE") <(echo "$FDS_NOW"))"
done

criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
audit_criu "dump"
cp "$WORK/out.txt" "$WORK/out.at-dump"

for op in restore write-bo resume; do
    "$TOOL" mock reset --root "$ROOT" >/dev/null
    "$TOOL" mock fault --root "$ROOT" --op "$op" --at 1 >/dev/null
    rc=0
    "$CRIU" restore -D "$WORK/img" -L "$PLUGIN_DIR" -v4 -o "restore-$op.log" -d \
        --pidfile "$WORK/img/restored-$op.pid" || rc=$?
    "$TOOL" mock fault --root "$ROOT" --clear >/dev/null
    # criu ignores a failed RESUME_DEVICES_LATE; the plugin stops the task instead.
    [ "$rc" -ne 0 ] || [ "$op" = resume ] || fail "$op: the restore succeeded despite the injected fault"
    sleep 0.3
    pgrep -f "mockgpu-workload --root $ROOT" >/dev/null && fail "restore fault $op: a half-restored workload is running"
    "$TOOL" mock status --root "$ROOT" | grep -q "no open devices" ||
        fail "restore fault $op: GPU state left behind: $("$TOOL" mock status --root "$ROOT")"
    audit_criu "restore fault $op"
done

"$TOOL" mock reset --root "$ROOT" >/dev/null
criu_restore "$WORK/img"
audit_criu "restore"
FDS_AFTER=$(fds_of "$RPID")
[ "$FDS_AFTER" = "$FDS_BEFORE" ] || fail "the restored task's fds differ from the original's:
$(diff <(echo "$FDS_BEFORE") <(echo "$FDS_AFTER"))"
expect_unpaused "restore"
wait_for_line "$WORK/out.txt" "^checksum " 120
GOT=$(checksum_of "$WORK/out.txt")
[ "$GOT" = "$EXPECTED" ] || fail "checksum after the audited runs $GOT, expected $EXPECTED"
note "fd audit: no fd leaked in criu or the task over every dump and restore fault; checksum $GOT"
