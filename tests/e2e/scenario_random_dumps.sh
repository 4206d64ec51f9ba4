#!/usr/bin/env bash
# A busy workload on two GPUs (no pause between its steps: most moments are inside a mock driver
# call) dumped at random moments, 30 in all: RUNS workloads, each dumped DUMPS times in a chain
# (dump, GPU reset, restore, another dump at another random moment...). Every dump must succeed the
# first time, and every run, stopped once its last restore is done, finish with the checksum of an
# uninterrupted run of as many steps. Some dumps must have
# caught the workload inside a driver call (the plugin's log says it waited for the call to end).
# E2E_SEED replays the moments of an earlier run.
source "$(dirname "$0")/lib.sh"
RUNS=${RANDOM_DUMP_RUNS:-6} DUMPS=${RANDOM_DUMPS_PER_RUN:-5}
SEED=${E2E_SEED:-$((($(date +%s%N) / 1000) % 32768))}
RANDOM=$SEED
note "random moments from seed $SEED (E2E_SEED=$SEED replays them)"
ROOT=$(make_machine machine --gpus 2)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 2 --buffers 3 --size 65536)
# The moments are counted in the workload's steps, not in time (a loaded machine runs it several
# times slower): dump N of a run comes after a random step of the N-th slice of the first 400
# steps, plus 0-9 ms into the next step. The workload steps until the run is done with it
# (--stop-file): with a fixed 1,000 steps, a run under load finished before criu reached its
# fifth dump.
SLICE=$((400 / DUMPS))

inside=0 steps=()
for run in $(seq "$RUNS"); do
    out="$WORK/out-$run.txt"
    start_workload "$out" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 0 --steps 100000 \
        --stop-file "$WORK/stop-$run"
    pid=$WPID
    for dump in $(seq "$DUMPS"); do
        step=$(((dump - 1) * SLICE + 1 + RANDOM % SLICE))
        wait_for_line "$out" ": step $step/"
        ms=$((RANDOM % 10))
        sleep "0.00$ms"
        img="$WORK/img-$run-$dump"
        if ! criu_dump "$img" "$pid"; then
            fail "run $run, dump $dump (after step $step + $ms ms): the dump failed (the first try)"
        fi
        if grep -q "was inside [0-9]* driver call" "$img/dump.log"; then inside=$((inside + 1)); fi
        wait_gone "$pid" 10
        "$TOOL" mock reset --root "$ROOT" >/dev/null
        criu_restore "$img"
        pid=$RPID
    done
    touch "$WORK/stop-$run"
    wait_for_line "$out" "^checksum " 120
    stopped_checksums "$ROOT" "$out" "${ARGS[@]}"
    [ "$GOT" = "$EXPECTED" ] || fail "run $run: checksum $GOT after $DUMPS dumps and restores and" \
        "$STOPPED_AFTER steps, an uninterrupted run's $EXPECTED"
    steps+=("$STOPPED_AFTER")
    rm -rf "$WORK"/img-"$run"-*
done
total=$((RUNS * DUMPS))
[ "$inside" -gt 0 ] || fail "none of the $total dumps caught the workload inside a driver call"
note "random dumps: $total dumps, each the first try; $inside caught the workload inside a driver" \
    "call; $RUNS runs, each with the checksum of an uninterrupted run of as many steps (${steps[*]})"
