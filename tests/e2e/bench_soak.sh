#!/usr/bin/env bash
# bench.soak (issue 55 item 3): one process on a two-GPU mock machine (the inference shape: 5
# buffers of 1 MiB on each GPU, one rewritten at every step) dumped and restored SOAK_CYCLES times
# in a row (10 by default, under a minute in CI; the issue's 300 by hand: SOAK_CYCLES=300 ctest -R
# bench.soak -V). Each cycle: a --leave-running dump, a dump that ends the process, and a restore
# of it, each dump incremental against the dump before it (parent-images); every tenth cycle the
# chain is flattened (`criu-amdgpu image flatten`), the flattened copy is restored, the chain's
# folders are removed and the next dump is made against the flattened copy. Between two dumps the
# process runs at least one step.
# After every cycle it counts what the cycles could leave behind: the mock driver's contexts (its
# open files), BOs, queues, events, GPU memory in use and state entries outside the contexts (call
# gates, fault counters); the restored process's fds and mappings; fds the plugin left open in
# criu at its end (an audit plugin beside it records criu's fds when criu loads it and as criu
# exits: tests/e2e/fd_audit_plugin.c); the entries of /run/criu-amdgpu that criu's runs of this
# bench made (guardian-PID.log, paused-PID); the guardians of its dumps still alive once criu has
# exited. Any count that differs from cycle 1's fails the bench, naming the cycle; so does a dump
# or restore that fails, a GPU left paused after a --leave-running dump, and a final checksum (the
# process stopped after the last cycle, --stop-file) other than an uninterrupted run's of as many
# steps. The counts and criu's peak RSS of each run are printed at cycles 1, N/3, 2N/3 and N.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bench_lib.sh"
use_fd_audit_plugin
CYCLES=${SOAK_CYCLES:-10}
[[ "$CYCLES" =~ ^[1-9][0-9]*$ ]] || fail "SOAK_CYCLES: '$CYCLES' is not a number of cycles (1 or more)"
PEAK="$BUILD_DIR/bin/peak-rss-run"
GUARDIANS=/run/criu-amdgpu
B=bench.soak

ROOT=$(make_machine machine --gpus 2)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 2 --buffers 5 --size 1M --shape inference)
# Targets of fds the plugin or its backends open (scenario_fd_audit.sh).
GPU_FD='^[0-9]+ -> ('"$ROOT"'/|/dev/dri/|/dev/kfd|anon_inode:dmabuf|.*/amdgpu-[^/]*\.img|'"$GUARDIANS"'/)'

# The process prints every step to out.txt; only the dumps that end it are restored, so the file
# is as long at each restore as at its dump.
OUT=$WORK/out.txt
start_workload "$OUT" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --steps 100000000 --step-ms 50 \
    --stop-file "$WORK/stop" --result "$WORK/result.txt"
PID=$WPID
wait_for_line "$OUT" "step 1/"

last_step() { sed -nE 's/^workload: step ([0-9]+)\/.*/\1/p' "$OUT" | tail -1; }

# uptime_ticks: the time since boot in clock ticks, as /proc/PID/stat's start times are.
uptime_ticks() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", $1 * hz }' /proc/uptime; }

# guardian_alive PID SINCE: PID is a guardian, started at uptime tick SINCE or later (pids wrap
# around here, and other tests run guardians of their own), that has not exited.
guardian_alive() {
    local stat started
    [ "$(cat "/proc/$1/comm" 2>/dev/null)" = amdgpu-guardian ] || return 1
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    read -ra stat <<<"${stat##*) }" # the fields after the name: state, ppid, ...
    started=${stat[19]}
    [ "${stat[0]}" != Z ] && [ "${stat[0]}" != X ] && [ "$started" -ge "$2" ]
}

# soak_criu WHAT VERB DIR ARGS...: criu VERB -D DIR ARGS with the audit plugin, under
# peak-rss-run; fails naming WHAT when criu fails. Sets RUN_KIB (criu's peak RSS); adds the GPU
# fds criu ended with to LEFT_FDS, its entries left in /run/criu-amdgpu to LEFT_RUN, and the
# guardian of a dump to GUARDIAN_LIST ("PID SINCE CYCLE").
soak_criu() {
    local what=$1 verb=$2 dir=$3; shift 3
    rm -f "$CRIU_FD_AUDIT_DIR"/criu-*
    local since
    since=$(($(uptime_ticks) - 2)) # /proc/uptime is rounded to a tick
    "$PEAK" "$CRIU" "$verb" -D "$dir" "$@" -L "$PLUGIN_DIR" -v4 -o "$verb.log" 2>"$dir/peak" ||
        fail "cycle $cycle: $what failed: $(grep -m3 -E 'Error' "$dir/$verb.log")"
    RUN_KIB=$(peak_rss_kib "$dir/peak")
    local init exit criu_pid guardian
    init=$(ls "$CRIU_FD_AUDIT_DIR"/criu-*.init 2>/dev/null | head -1)
    [ -n "$init" ] || fail "cycle $cycle: $what: the audit plugin recorded no criu run (was it loaded?)"
    exit=${init%.init}.exit
    [ -f "$exit" ] || fail "cycle $cycle: $what: criu recorded no fds at its end"
    criu_pid=${init##*/criu-}
    criu_pid=${criu_pid%.init}
    LEFT_FDS=$((LEFT_FDS + $(comm -13 <(sort "$init") <(sort "$exit") | grep -cE "$GPU_FD" || true)))
    for f in "$GUARDIANS/guardian-$criu_pid.log" "$GUARDIANS/paused-$criu_pid"; do
        [ ! -e "$f" ] || LEFT_RUN=$((LEFT_RUN + 1))
    done
    guardian=$(sed -nE 's/.*amdgpu_plugin: guardian ([0-9]+) releases.*/\1/p' "$dir/$verb.log" | head -1)
    if [ "$verb" = dump ]; then
        [ -n "$guardian" ] || fail "cycle $cycle: $what: criu's log names no guardian"
        GUARDIAN_LIST+=("$guardian $since $cycle")
    fi
}

# guardians_left BEFORE: the guardians of dumps of cycles before BEFORE still alive (a guardian is
# dismissed at its dump's end and exits at once, but on two busy cores it has taken seconds: those
# of the last cycle are not judged yet). Says which in $WORK/guardians-left.txt.
guardians_left() {
    local entry pid since from n=0
    : >"$WORK/guardians-left.txt"
    for entry in "${GUARDIAN_LIST[@]}"; do
        read -r pid since from <<<"$entry"
        [ "$from" -lt "$1" ] && guardian_alive "$pid" "$since" || continue
        n=$((n + 1))
        echo "  guardian $pid of cycle $from still runs: $(grep -E '^(State|PPid)' \
            "/proc/$pid/status" 2>/dev/null | tr '\n\t' '  ')" >>"$WORK/guardians-left.txt"
    done
    echo "$n"
}

# forget_gone_guardians: GUARDIAN_LIST without the guardians that have exited (each is looked at
# until then, not every cycle again).
forget_gone_guardians() {
    local entry pid since from kept=()
    for entry in "${GUARDIAN_LIST[@]}"; do
        read -r pid since from <<<"$entry"
        if guardian_alive "$pid" "$since"; then kept+=("$entry"); fi
    done
    GUARDIAN_LIST=("${kept[@]}")
}

# counts: one line of what a cycle could leave behind, "NAME=VALUE ...".
counts() {
    local status
    status=$("$TOOL" mock status --root "$ROOT")
    printf 'contexts=%s ' "$(grep -c '^context ' <<<"$status")"
    printf 'bos=%s ' "$(grep -c '^  bo ' <<<"$status")"
    printf 'queues=%s ' "$(grep -c '^  queue ' <<<"$status")"
    printf 'events=%s ' "$(grep -oE ' [0-9]+ events' <<<"$status" | awk '{ n += $1 } END { print n + 0 }')"
    printf 'in_use=%s ' "$(grep -oE 'in use [0-9]+' <<<"$status" | awk '{ n += $3 } END { print n + 0 }')"
    # What the driver keeps outside the contexts (a call in progress holds a gate file a moment).
    printf 'driver_state=%s ' "$(find "$ROOT/state" -mindepth 1 -path "$ROOT/state/contexts" -prune -o \
        -print | grep -vcE '\.call-[0-9]+$')"
    # (A driver call in progress holds its context's lock file a moment: not counted.)
    printf 'process_fds=%s ' "$(find "/proc/$PID/fd" -mindepth 1 -printf '%l\n' 2>/dev/null | grep -vc '/busy$')"
    printf 'process_maps=%s ' "$(wc -l <"/proc/$PID/maps")"
    printf 'criu_gpu_fds=%s run_entries=%s guardians=%s\n' "$LEFT_FDS" "$LEFT_RUN" \
        "$(guardians_left $((cycle - 1)))"
}

LEFT_FDS=0 LEFT_RUN=0 GUARDIAN_LIST=()
CHAIN=$WORK/chain
mkdir -p "$CHAIN"
parent="" # the checkpoint the next dump is made against, a folder of $CHAIN
declare -A AT PRINTED PRINTED_RSS PRINTED_S
for c in 1 $((CYCLES / 3)) $((2 * CYCLES / 3)) "$CYCLES"; do AT[$c]=1; done
first=""
t0=$(now)
for cycle in $(seq "$CYCLES"); do
    step=$(last_step)
    for _ in $(seq 400); do [ "$(last_step)" -gt "$step" ] && break; sleep 0.02; done
    [ "$(last_step)" -gt "$step" ] || fail "cycle $cycle: the process ran no step in 8 s"
    running=c$cycle-running
    mkdir -p "$CHAIN/$running"
    CRIU_AMDGPU_PARENT_IMAGES=${parent:+../$parent} soak_criu "the --leave-running dump" dump \
        "$CHAIN/$running" -t "$PID" --leave-running
    rss_running=$RUN_KIB
    kill -0 "$PID" 2>/dev/null || fail "cycle $cycle: the process did not keep running"
    "$TOOL" mock status --root "$ROOT" | grep -q PAUSED &&
        fail "cycle $cycle: the GPU stayed paused after the --leave-running dump"
    parent=$running

    step=$(last_step)
    for _ in $(seq 400); do [ "$(last_step)" -gt "$step" ] && break; sleep 0.02; done
    dumped=c$cycle
    mkdir -p "$CHAIN/$dumped"
    CRIU_AMDGPU_PARENT_IMAGES=../$parent soak_criu "the dump" dump "$CHAIN/$dumped" -t "$PID"
    rss_dump=$RUN_KIB
    wait_gone "$PID" 10
    parent=$dumped

    restore_from=$dumped
    if [ $((cycle % 10)) = 0 ]; then
        "$TOOL" image flatten "$CHAIN/$dumped" "$CHAIN/flat$cycle" >"$WORK/flatten.txt" ||
            fail "cycle $cycle: image flatten: $(cat "$WORK/flatten.txt")"
        for d in "$CHAIN"/*; do [ "$d" = "$CHAIN/flat$cycle" ] || rm -rf "$d"; done
        restore_from=flat$cycle parent=flat$cycle
    fi
    soak_criu "the restore" restore "$CHAIN/$restore_from" -d --pidfile "$CHAIN/$restore_from/pid"
    rss_restore=$RUN_KIB
    PID=$(cat "$CHAIN/$restore_from/pid")
    STARTED_PIDS+=("$PID")
    sleep 0.1 # the restored process's first calls done

    # A driver call in progress holds a file a moment: a count that differs is taken again, for
    # up to a second; what was left behind stays.
    forget_gone_guardians
    now_counts=$(counts)
    [ -n "$first" ] || first=$now_counts
    for _ in $(seq 10); do
        [ "$now_counts" != "$first" ] || break
        sleep 0.1
        now_counts=$(counts)
    done
    [ "$now_counts" = "$first" ] || fail "cycle $cycle: the counts changed since cycle 1:
  cycle 1:      $first
  cycle $cycle: $now_counts
  the process's fds: $(ls -l "/proc/$PID/fd" | tail -n +2 | awk '{ print $(NF - 2), $(NF - 1), $NF }' | tr '\n' ';')
$(cat "$WORK/guardians-left.txt")"
    if [ -n "${AT[$cycle]:-}" ]; then
        PRINTED[$cycle]=$now_counts
        PRINTED_RSS[$cycle]="$((rss_running / 1024)) $((rss_dump / 1024)) $((rss_restore / 1024))"
        PRINTED_S[$cycle]=$(seconds_since "$t0")
    fi
done

touch "$WORK/stop"
wait_gone "$PID" 60
for _ in $(seq 100); do [ "$(guardians_left $((CYCLES + 1)))" = 0 ] && break; sleep 0.1; done
[ "$(guardians_left $((CYCLES + 1)))" = 0 ] || fail "guardians of this bench's dumps still run:
$(cat "$WORK/guardians-left.txt")"
[ -f "$WORK/result.txt" ] || fail "the process wrote no result: $(tail -2 "$OUT")"
steps=$(sed -nE 's/^workload: stopped after step ([0-9]+)$/\1/p' "$OUT" | tail -1)
[ -n "$steps" ] || fail "the process did not say how many steps it ran: $(tail -2 "$OUT")"
EXPECTED=$(reference_checksum "$ROOT" "${ARGS[@]}" --steps "$steps")
GOT=$(checksum_of "$WORK/result.txt")
[ "$GOT" = "$EXPECTED" ] ||
    fail "after $CYCLES cycles and $steps steps: checksum $GOT, an uninterrupted run's $EXPECTED"
status=$("$TOOL" mock status --root "$ROOT")
grep -q "^no open devices" <<<"$status" || fail "the process ended and the GPUs still hold: $status"

echo "$B: criu $CRIU_VERSION, one process on a two-GPU mock machine (inference shape, 5 MiB per" \
    "GPU), $CYCLES cycles of a --leave-running dump, a dump and a restore, incremental, the chain" \
    "flattened every 10 cycles ($(conditions))"
printf '  %-6s %8s  %s\n' cycle seconds "counts after the cycle's restore"
for c in $(printf '%s\n' "${!PRINTED[@]}" | sort -n); do
    printf '  %-6s %8s  %s\n' "$c" "${PRINTED_S[$c]}" "${PRINTED[$c]}"
done
printf '  %-6s  %s\n' cycle "criu's peak RSS, MiB: --leave-running dump, dump, restore"
for c in $(printf '%s\n' "${!PRINTED_RSS[@]}" | sort -n); do
    printf '  %-6s  %s\n' "$c" "${PRINTED_RSS[$c]}"
done
echo "  every count as at cycle 1 after each of the $CYCLES cycles; the process ran $steps steps" \
    "and ended with the checksum of an uninterrupted run ($GOT)"
read -r r1 d1 s1 <<<"${PRINTED_RSS[1]}"
read -r rn dn sn <<<"${PRINTED_RSS[$CYCLES]}"
figure "$B" "$CYCLES cycles (--leave-running dump, dump, restore; flattened every 10), criu $CRIU_VERSION" \
    "no count grew: ${PRINTED[$CYCLES]}" "the counts at cycle 1" "none grows" met
figure "$B" "criu's peak RSS over $CYCLES cycles" \
    "cycle $CYCLES: dumps $rn and $dn MiB, restore $sn MiB" "cycle 1: dumps $r1 and $d1 MiB, restore $s1 MiB" \
    "printed" "-"
