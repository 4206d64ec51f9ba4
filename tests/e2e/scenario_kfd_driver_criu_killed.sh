#!/usr/bin/env bash
# criu SIGKILLed in the middle of a dump on the KFD path (issue 50's "criu killed at each step",
# scenario_criu_killed.sh's on the mock): kfd-driver-workload, AMD's thunk, waits at its gate
# after step 3 while criu dumps it with our plugin; the user-space KFD driver holds one call of
# the dump unanswered (ROOT/faults: NAME STALL) and criu is killed while it waits there: in the
# middle of the pause (PROCESS_INFO held, not served: no queue stopped yet), right after it
# (CHECKPOINT held: the queues stopped) and during the BO contents copy (an SDMA submission
# held). No plugin hook runs after that. Once the queues are stopped, the dump's guardian, a
# process outside criu, must UNPAUSE them in the driver within a second through a task criu
# really traced (PTRACE_SEIZE, pidfd_getfd of the task's /dev/kfd), say so in its log, end and
# leave no record. Each time the task must be left running, untraced, its queues unpaused. Then
# the workload goes on from its gate: its doorbells reach its queues, every byte is checked to
# the last step, and its checksum is an uninterrupted run's.
# In the middle of PROCESS_INFO no guardian runs yet here: the frontend starts it before a pause
# only for a process holding a character device it recognizes as AMD's, and the driver's device
# files are block nodes (tests/kfd/DRIVER.md); it starts once the pause returns.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
LIMIT_MS=1000 # what the README promises
GUARDIANS=/run/criu-amdgpu
running() { grep -qE '^State:\s+[^Z]' "/proc/$1/status" 2>/dev/null; }

run_to_gate
GPU=$(gpu_of_minor 128)
n=0
for point in "ioctl:PROCESS_INFO|in the middle of the pause" "ioctl:CHECKPOINT|right after the pause" \
    "submitSdma|during the contents copy"; do
    call=${point%%|*} where=${point#*|}
    n=$((n + 1))
    img=$WORK/img-$n
    mkdir -p "$img"
    rm -f "$ROOT/stalled"
    echo "$call STALL" >"$ROOT/faults"
    "$CRIU" dump -t "$WPID" -D "$img" -v4 -o dump.log -L "$PLUGIN_DIR" --link-remap 2>"$img/criu-stderr.log" &
    CRIU_PID=$!
    for _ in $(seq 400); do [ -e "$ROOT/stalled" ] && break; sleep 0.05; done
    [ -e "$ROOT/stalled" ] || fail "$call: the dump never reached the $call call: $(grep Error "$img/dump.log" | tail -3)"
    state=$(query "$WPID")
    if [ "$call" = ioctl:PROCESS_INFO ]; then
        grep -qx "process running evictions 0" <<<"$state" || fail "$call: queues stopped before the pause was served: $state"
    else
        grep -qx "process paused evictions 1" <<<"$state" || fail "$call: the queues are not paused while criu waits: $state"
    fi
    GUARDIAN=$(grep -oE 'guardian [0-9]+ releases' "$img/dump.log" | awk '{print $2}' || true)
    if [ "$call" != ioctl:PROCESS_INFO ]; then
        [ -n "$GUARDIAN" ] || fail "$call: criu's log names no guardian"
        running "$GUARDIAN" || fail "$call: the guardian $GUARDIAN is not running"
        [ -e "$GUARDIANS/paused-$CRIU_PID" ] || fail "$call: no record of the paused processes"
    fi
    kill -9 "$CRIU_PID"
    wait "$CRIU_PID" 2>/dev/null || true
    killed_at=$(date +%s%N)
    for _ in $(seq 100); do
        state=$(query "$WPID")
        grep -qx "process running evictions 0" <<<"$state" && break
        sleep 0.02
    done
    released_ms=$((($(date +%s%N) - killed_at) / 1000000))
    grep -qx "process running evictions 0" <<<"$state" || fail "$call: the queues are still paused 2 s after criu died: $state"
    [ "$released_ms" -le "$LIMIT_MS" ] || fail "$call: the guardian took $released_ms ms (more than $LIMIT_MS ms)"
    [ "$(grep -c "^queue [a-z]* $GPU " <<<"$state")" = 2 ] || fail "$call: the workload lost its queues: $state"
    log=$GUARDIANS/guardian-$CRIU_PID.log
    if [ -n "$GUARDIAN" ]; then
        grep -q "process $WPID: unpaused" "$log" 2>/dev/null ||
            fail "$call: the guardian's log does not say it unpaused $WPID: $(cat "$log" 2>/dev/null)"
        for _ in $(seq 50); do running "$GUARDIAN" || break; sleep 0.02; done
        running "$GUARDIAN" && fail "$call: the guardian is still running after its work"
    fi
    [ -e "$GUARDIANS/paused-$CRIU_PID" ] && fail "$call: the record outlived the release"
    kill -0 "$WPID" 2>/dev/null || fail "$call: the workload died with criu"
    untraced "$WPID" "$call"
    rm -f "$log"
    remove_link_remaps
    note "criu killed $where ($call held): running unpaused $released_ms ms after, guardian ${GUARDIAN:-none}"
done

RPID=$WPID # the same process goes on
finish_restored "$GPU"
end_driver
note "kfd driver criu killed: $n dumps killed, the workload ran on unpaused and ended with checksum $GOT"
