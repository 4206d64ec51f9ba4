#!/usr/bin/env bash
# bench.load (issue 55 item 2): LOAD_LANES (8) processes on one two-GPU mock machine, each with
# LOAD_BUFFERS (1) buffer of LOAD_SIZE (12M: six 2 MiB frames, so a restore's packed reader fills
# every slot) on each GPU, dumped by as many criu runs started at once, then restored by as many
# criu runs at once (parallel-restore: the contents are copied in criu's own process), with
# content-encryption=aes-256-gcm and content-compression=zstd. Each workload runs in a folder of
# its own (start_lane says why).
# Invariants (the bench fails when one breaks): every dump and restore succeeds and every process
# finishes with the checksum of an uninterrupted run of as many steps (each
# lane steps until the bench stops it); after the dumps, and once the restored
# processes have ended, nothing is left on the GPUs; criu's peak RSS in every dump and restore is
# at most max-buffer-size (LOAD_BUFFER_MIB, 4 MiB: a sixth of each process's GPU memory, so the
# cap has to hold) plus a fixed overhead, OVERHEAD_MIB: criu and the plugin with no contents to
# move (BASE_MIB: a lone dump and restore of the same process shape with 64 KiB buffers measure
# it in the same run, and fail the bench above it) and, per GPU, what a restore's packed reader
# holds outside max-buffer-size (PACKED_READER_MIB: formats/src/packed_image.cpp reads ahead into
# 4 frame slots, each up to 3 buffers of a 2 MiB frame: sealed, decrypted, decompressed). Each
# lane's dump and restore time is printed, with the spread (slowest / fastest, slowest / median):
# a lane that starves shows as a spread far above 1 (a figure with a target, not an invariant:
# CI's two shared cores decide the order in which eight criu runs get the CPU).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bench_lib.sh"
LANES=${LOAD_LANES:-8}
BUFFERS=${LOAD_BUFFERS:-1}
SIZE=${LOAD_SIZE:-12M}
BUFFER_MIB=${LOAD_BUFFER_MIB:-4}
BASE_MIB=32
PACKED_READER_MIB=24
OVERHEAD_MIB=$((BASE_MIB + 2 * PACKED_READER_MIB))
SPREAD_TARGET=3 # slowest lane / median lane
PEAK="$BUILD_DIR/bin/peak-rss-run"
B=bench.load

ROOT=$(make_machine machine --gpus 2)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT CRIU_AMDGPU_MAX_BUFFER_SIZE=${BUFFER_MIB}M
# Each lane steps (100 ms a step) until the bench is done with it (--stop-file, lane's own): a
# fixed number of steps ran out before criu reached a lane when eight criu runs start at once on
# two busy cores. Its checksum is then compared with an uninterrupted run of as many steps.
ARGS=(--gpus 2 --buffers "$BUFFERS" --size "$SIZE" --steps 100000)
TINY_ARGS=(--gpus 2 --buffers "$BUFFERS" --size 64K --steps 100000)

KEYS=$WORK/keys
mkdir -m 0700 "$KEYS"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=criu-amdgpu-bench-load \
    -keyout "$KEYS/checkpoint.key" -out "$KEYS/checkpoint.crt" 2>/dev/null ||
    fail "openssl could not make a key and certificate"
chmod 0600 "$KEYS"/*
export CRIU_AMDGPU_CONTENT_CERTIFICATE=$KEYS/checkpoint.crt CRIU_AMDGPU_CONTENT_ENCRYPTION=aes-256-gcm
export CRIU_AMDGPU_CONTENT_COMPRESSION=zstd CRIU_AMDGPU_CONTENT_PRIVATE_KEY=$KEYS/checkpoint.key
export CRIU_AMDGPU_PARALLEL_RESTORE=true

# start_lane NAME ARGS...: the workload of ARGS as lane NAME (output $WORK/out-NAME.txt, result
# $WORK/result-NAME.txt); sets LANE_PID.
start_lane() {
    local name=$1; shift
    # A folder of its own: criu's parasite makes proc.crtools in the working folder of the pid
    # namespace's init it dumps, and two dumps at once in one folder collide (lib.sh).
    mkdir -p "$WORK/cwd-$name"
    WORKLOAD_DIR=$WORK/cwd-$name start_workload "$WORK/out-$name.txt" "$WORKLOAD" --root "$ROOT" "$@" --step-ms 100 \
        --stop-file "$WORK/stop-$name" --result "$WORK/result-$name.txt"
    LANE_PID=$WPID
}

# timed_criu NAME VERB ARGS...: criu VERB ARGS under peak-rss-run; writes "STATUS SECONDS" to
# $WORK/NAME.VERB.time and peak-rss-run's line to $WORK/NAME.VERB.peak.
timed_criu() {
    local name=$1 verb=$2; shift 2
    local t0 rc=0
    t0=$(now)
    "$PEAK" "$CRIU" "$verb" "$@" -L "$PLUGIN_DIR" -v4 -o "$verb.log" \
        2>"$WORK/$name.$verb.peak" || rc=$?
    echo "$rc $(seconds_since "$t0")" >"$WORK/$name.$verb.time"
}

# lane_figures NAME VERB: sets LANE_S and LANE_KIB (seconds, peak RSS) of a finished timed_criu;
# fails when criu failed.
lane_figures() {
    local rc
    read -r rc LANE_S <"$WORK/$1.$2.time"
    [ "$rc" = 0 ] || fail "lane $1: criu $2 failed (status $rc): $(grep -m3 Error "$WORK/img-$1/$2.log")"
    LANE_KIB=$(peak_rss_kib "$WORK/$1.$2.peak")
    [ -n "$LANE_KIB" ] || fail "lane $1: no peak RSS of criu $2"
}

# stop_lane NAME: lane NAME's (restored) process stops after its current step.
stop_lane() { touch "$WORK/stop-$1"; }
# finished NAME PID ARGS...: the restored process PID of lane NAME (started with ARGS), stopped,
# ends with the checksum of an uninterrupted run of as many steps (sets STOPPED_AFTER).
finished() {
    local name=$1 pid=$2
    shift 2
    wait_gone "$pid" 120
    [ -f "$WORK/result-$name.txt" ] ||
        fail "lane $name: the restored process wrote no result: $(tail -2 "$WORK/out-$name.txt")"
    stopped_checksums "$ROOT" "$WORK/result-$name.txt" "$@"
    [ "$GOT" = "$EXPECTED" ] || fail "lane $name: the restored process ended with checksum $GOT after" \
        "step $STOPPED_AFTER, expected $EXPECTED (an uninterrupted run of as many steps)"
}

nothing_on_gpu() {
    local status
    status=$("$TOOL" mock status --root "$ROOT")
    grep -q "^no open devices" <<<"$status" || fail "$1: the GPUs still hold: $status"
}

# lanes_at_once VERB: criu VERB of every lane at once (lane_args VERB I: its arguments); sets WALL
# (seconds until the last ended), RUN_S and RUN_KIB (each run's seconds and peak RSS).
lane_args() {
    if [ "$1" = dump ]; then
        echo "-t ${lane_pids[$2 - 1]} -D $WORK/img-$2"
    else
        echo "-D $WORK/img-$2 -d --pidfile $WORK/img-$2/pid"
    fi
}
lanes_at_once() {
    local verb=$1 i t0
    t0=$(now)
    for i in $(seq "$LANES"); do
        # shellcheck disable=SC2046 # lane_args prints words without spaces of their own
        timed_criu "$i" "$verb" $(lane_args "$verb" "$i") &
    done
    wait
    WALL=$(seconds_since "$t0")
    RUN_S=() RUN_KIB=()
    for i in $(seq "$LANES"); do
        lane_figures "$i" "$verb"
        RUN_S+=("$LANE_S") RUN_KIB+=("$LANE_KIB")
    done
}

# The lanes: every workload at step 3 or later, then every dump at once.
lane_pids=()
for i in $(seq "$LANES"); do
    start_lane "$i" "${ARGS[@]}"
    lane_pids+=("$LANE_PID")
done
for i in $(seq "$LANES"); do wait_for_line "$WORK/out-$i.txt" "step 3/" 120; done
for i in $(seq "$LANES"); do mkdir -p "$WORK/img-$i"; done
lanes_at_once dump
dump_wall=$WALL dump_s=("${RUN_S[@]}") dump_kib=("${RUN_KIB[@]}")
for i in $(seq "$LANES"); do wait_gone "${lane_pids[i - 1]}" 10; done
sleep 0.2
nothing_on_gpu "after $LANES dumps at once"
for i in $(seq "$LANES"); do
    n=$(ls "$WORK/img-$i"/amdgpu-packed-* 2>/dev/null | wc -l)
    [ "$n" = $((2 * BUFFERS)) ] || fail "lane $i: $n packed (encrypted, compressed) contents files, not $((2 * BUFFERS))"
done

lanes_at_once restore
restore_wall=$WALL restore_s=("${RUN_S[@]}") restore_kib=("${RUN_KIB[@]}")
for i in $(seq "$LANES"); do
    # criu's own process copied the contents, so its peak RSS is where the cap has to hold.
    grep -q "parallel restore: the restored tasks hand BO contents to criu's main process" \
        "$WORK/img-$i/restore.log" || fail "lane $i: the restore was not parallel: $(grep -m1 \
        'parallel' "$WORK/img-$i/restore.log")"
    pid=$(cat "$WORK/img-$i/pid")
    STARTED_PIDS+=("$pid")
done

t0=$(now)
# criu and the plugin with no contents to move: one process of the same shape with 64 KiB buffers,
# dumped and restored alone while the restored lanes finish their steps.
start_lane tiny "${TINY_ARGS[@]}"
wait_for_line "$WORK/out-tiny.txt" "step 3/"
mkdir -p "$WORK/img-tiny"
timed_criu tiny dump -t "$LANE_PID" -D "$WORK/img-tiny"
lane_figures tiny dump
tiny_dump_kib=$LANE_KIB
timed_criu tiny restore -D "$WORK/img-tiny" -d --pidfile "$WORK/img-tiny/pid"
lane_figures tiny restore
tiny_restore_kib=$LANE_KIB
STARTED_PIDS+=("$(cat "$WORK/img-tiny/pid")")

for i in $(seq "$LANES") tiny; do stop_lane "$i"; done
steps=()
for i in $(seq "$LANES"); do
    finished "$i" "$(cat "$WORK/img-$i/pid")" "${ARGS[@]}"
    steps+=("$STOPPED_AFTER")
done
tail_s=$(seconds_since "$t0")
finished tiny "$(cat "$WORK/img-tiny/pid")" "${TINY_ARGS[@]}"
nothing_on_gpu "after every restored process ended"

# The figures.
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
largest() { printf '%s\n' "$@" | sort -g | tail -1; }
limit_kib=$(((BUFFER_MIB + OVERHEAD_MIB) * 1024))
per_process_mib=$(($(numfmt --from=iec "$SIZE") * BUFFERS * 2 / 1048576))
echo "$B: criu $CRIU_VERSION, $LANES processes on a two-GPU mock machine, $BUFFERS buffer(s) of" \
    "$SIZE on each GPU ($per_process_mib MiB of GPU memory each), aes-256-gcm + zstd," \
    "max-buffer-size $BUFFER_MIB MiB, parallel-restore ($(conditions))"
printf '  %-5s %10s %14s %12s %16s\n' lane "dump (s)" "dump RSS MiB" "restore (s)" "restore RSS MiB"
for i in $(seq "$LANES"); do
    printf '  %-5s %10s %14s %12s %16s\n' "$i" "${dump_s[i - 1]}" "$(mib "${dump_kib[i - 1]}")" \
        "${restore_s[i - 1]}" "$(mib "${restore_kib[i - 1]}")"
done
printf '  %-5s %10s %14s %12s %16s\n' alone - "$(mib "$tiny_dump_kib")" - "$(mib "$tiny_restore_kib")"
echo "  every dump at once: $dump_wall s; every restore at once: $restore_wall s; then the lone" \
    "run and the restored processes' last steps: $tail_s s more"
dump_spread=$(ratio "$(largest "${dump_s[@]}")" "$(fastest "${dump_s[@]}")")
dump_vs_median=$(ratio "$(largest "${dump_s[@]}")" "$(median "${dump_s[@]}")")
restore_spread=$(ratio "$(largest "${restore_s[@]}")" "$(fastest "${restore_s[@]}")")
restore_vs_median=$(ratio "$(largest "${restore_s[@]}")" "$(median "${restore_s[@]}")")
echo "  spread: dumps slowest/fastest $dump_spread, slowest/median $dump_vs_median; restores" \
    "slowest/fastest $restore_spread, slowest/median $restore_vs_median (target: slowest/median at" \
    "most $SPREAD_TARGET)"
echo "  peak RSS limit: max-buffer-size $BUFFER_MIB MiB + fixed overhead $OVERHEAD_MIB MiB" \
    "(criu and the plugin $BASE_MIB MiB, a packed reader's frames $PACKED_READER_MIB MiB per GPU) =" \
    "$((BUFFER_MIB + OVERHEAD_MIB)) MiB; criu and the plugin measured by the lone run with 64 KiB" \
    "buffers: dump $(mib "$tiny_dump_kib") MiB, restore $(mib "$tiny_restore_kib") MiB"
echo "  every lane restored and finished with the checksum of an uninterrupted run of as many" \
    "steps (stopped after steps $(printf '%s\n' "${steps[@]}" | sort -n | paste -sd' '))"

over=""
for k in "$tiny_dump_kib" "$tiny_restore_kib"; do
    [ "$k" -le $((BASE_MIB * 1024)) ] ||
        over+="the lone run's criu peaked at $(mib "$k") MiB, over the stated $BASE_MIB MiB of criu and the plugin; "
done
for i in $(seq "$LANES"); do
    for k in "${dump_kib[i - 1]}" "${restore_kib[i - 1]}"; do
        [ "$k" -le "$limit_kib" ] ||
            over+="lane $i: criu peaked at $(mib "$k") MiB, over $((BUFFER_MIB + OVERHEAD_MIB)) MiB; "
    done
done
figure "$B" "$LANES dumps at once, $per_process_mib MiB each, criu $CRIU_VERSION" \
    "slowest lane $(largest "${dump_s[@]}") s: $dump_vs_median of the median" \
    "median lane $(median "${dump_s[@]}") s" "at most $SPREAD_TARGET" \
    "$(at_most "$dump_vs_median" "$SPREAD_TARGET")"
figure "$B" "$LANES restores at once, $per_process_mib MiB each, criu $CRIU_VERSION" \
    "slowest lane $(largest "${restore_s[@]}") s: $restore_vs_median of the median" \
    "median lane $(median "${restore_s[@]}") s" "at most $SPREAD_TARGET" \
    "$(at_most "$restore_vs_median" "$SPREAD_TARGET")"
figure "$B" "criu's peak RSS, $LANES lanes at once" \
    "dump $(mib "$(largest "${dump_kib[@]}")") MiB, restore $(mib "$(largest "${restore_kib[@]}")") MiB" \
    "max-buffer-size + $OVERHEAD_MIB MiB = $((BUFFER_MIB + OVERHEAD_MIB)) MiB" "at most the limit" \
    "$( [ -z "$over" ] && echo met || echo "NOT met")"
[ -z "$over" ] || fail "$over"
