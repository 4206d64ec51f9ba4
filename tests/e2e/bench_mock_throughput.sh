#!/usr/bin/env bash
# bench.mock_throughput: a mock GPU holding BENCH_MIB MiB (1024 by default) is dumped and restored
# through real criu; the plugin's content lanes and criu's whole dump and restore are put next to
# a raw copy (cat) of the same bytes to the same filesystem, and criu's peak RSS next to
# max-buffer-size. BENCH_RUNS (3 by default) dumps and restores; each side's speed is its fastest
# run (the lanes' and the copies': bench_lib.sh's fastest says why), the medians printed beside.
# Exits non-zero only when it could not measure.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bench_lib.sh"
MIB=${BENCH_MIB:-1024}
RUNS=${BENCH_RUNS:-3}
BUFFER_MIB=64 # max-buffer-size (the default)
PEAK="$BUILD_DIR/bin/peak-rss-run"
BUFFERS=$((MIB / 256))
BYTES=$((BUFFERS * 256 * 1048576))
ROOT=$(make_machine machine --gpus 1 --vram 16G)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT CRIU_AMDGPU_MAX_BUFFER_SIZE=${BUFFER_MIB}M

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" --gpus 1 --buffers "$BUFFERS" \
    --size $((256 * 1048576)) --steps 2 --step-ms 600000
wait_for_line "$WORK/out.txt" "step 1/" 600
BO_FILES=("$ROOT"/state/contexts/*/bo-*.data)

# raw_copy OUT FILES...: seconds of cat FILES > OUT, the faster of two copies.
raw_copy() {
    local out=$1; shift
    local t0 times=()
    for _ in 1 2; do
        sync # the writeback of what came before is not this copy's
        t0=$(now)
        cat "$@" >"$out"
        times+=("$(seconds_since "$t0")")
        rm -f "$out"
    done
    printf '%s\n' "${times[@]}" | sort -g | head -1
}

dump_s=() dump_lane=() restore_s=() restore_lane=() dump_rss=() restore_rss=() task_hwm=()
raw_dump=() raw_restore=()
pid=$WPID
for run in $(seq "$RUNS"); do
    img="$WORK/img$run"
    mkdir -p "$img"
    sync # each step starts with no writeback pending, like the raw copy it is compared with
    t0=$(now)
    "$PEAK" "$CRIU" dump -t "$pid" -D "$img" -L "$PLUGIN_DIR" -v4 -o dump.log 2>"$img/peak" ||
        fail "criu dump failed"
    dump_s+=("$(seconds_since "$t0")")
    dump_rss+=("$(peak_rss_kib "$img/peak")")
    read -r b s < <(lane_totals "$img/dump.log" dumped)
    [ "$b" = "$BYTES" ] || fail "the lanes dumped $b bytes, the GPU holds $BYTES"
    dump_lane+=("$s")
    raw_dump+=("$(raw_copy "$WORK/raw.img" "${BO_FILES[@]}")")
    "$TOOL" mock reset --root "$ROOT" >/dev/null

    sync
    t0=$(now)
    "$PEAK" "$CRIU" restore -D "$img" -L "$PLUGIN_DIR" -v4 -o restore.log -d \
        --pidfile "$img/pid" 2>"$img/peak" || fail "criu restore failed"
    restore_s+=("$(seconds_since "$t0")")
    restore_rss+=("$(peak_rss_kib "$img/peak")")
    pid=$(cat "$img/pid")
    STARTED_PIDS+=("$pid")
    task_hwm+=("$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")")
    read -r b s < <(lane_totals "$img/restore.log" restored)
    [ "$b" = "$BYTES" ] || fail "the lanes restored $b bytes, the GPU held $BYTES"
    restore_lane+=("$s")
    BO_FILES=("$ROOT"/state/contexts/*/bo-*.data)
    raw_restore+=("$(raw_copy "$ROOT/raw.data" "$img"/amdgpu-drm-pages-*.img)")
    [ "$run" = "$RUNS" ] || rm -rf "$img"
done
kill -9 "$pid" 2>/dev/null || true

d=$(fastest "${dump_s[@]}") dl=$(fastest "${dump_lane[@]}") rd=$(fastest "${raw_dump[@]}")
r=$(fastest "${restore_s[@]}") rl=$(fastest "${restore_lane[@]}") rr=$(fastest "${raw_restore[@]}")
echo "bench.mock_throughput: criu $CRIU_VERSION, one mock GPU holding $MIB MiB in $BUFFERS BOs," \
    "max-buffer-size ${BUFFER_MIB} MiB, the fastest of $RUNS run(s) ($(conditions))"
echo "  each run's seconds: dump lane ${dump_lane[*]}, cat ${raw_dump[*]}; restore lane" \
    "${restore_lane[*]}, cat ${raw_restore[*]} (medians: dump $(ratio "$(median "${raw_dump[@]}")" \
    "$(median "${dump_lane[@]}")"), restore $(ratio "$(median "${raw_restore[@]}")" \
    "$(median "${restore_lane[@]}")") of the raw copy)"
echo "  dump:    raw copy (cat) $(mib_per_s "$BYTES" "$rd") MiB/s (the limit); plugin lane" \
    "$(mib_per_s "$BYTES" "$dl") MiB/s: $(ratio "$rd" "$dl") of the raw copy (target: at least 0.95);" \
    "whole criu dump $d s, raw copy $rd s"
echo "  restore: raw copy (cat) $(mib_per_s "$BYTES" "$rr") MiB/s (the limit); plugin lane" \
    "$(mib_per_s "$BYTES" "$rl") MiB/s: $(ratio "$rr" "$rl") of the raw copy (target: at least 0.95);" \
    "whole criu restore $r s, raw copy $rr s"
echo "  peak RSS: criu dump $(($(median "${dump_rss[@]}") / 1024)) MiB, criu restore" \
    "$(($(median "${restore_rss[@]}") / 1024)) MiB, the restored task (where the contents were" \
    "copied) $(($(median "${task_hwm[@]}") / 1024)) MiB; limit max-buffer-size + 64 MiB =" \
    "$((BUFFER_MIB + 64)) MiB, for $MIB MiB of GPU memory"
B=bench.mock_throughput
for verb in dump restore; do
    if [ "$verb" = dump ]; then raw=$rd lane=$dl; else raw=$rr lane=$rl; fi
    figure "$B" "$verb of $MIB MiB, criu $CRIU_VERSION, the fastest of $RUNS run(s)" \
        "plugin lane $(mib_per_s "$BYTES" "$lane") MiB/s: $(ratio "$raw" "$lane") of the raw copy" \
        "cat of the same bytes to the same file system $(mib_per_s "$BYTES" "$raw") MiB/s" \
        "at least 0.95 of the limit" "$(at_least "$(ratio "$raw" "$lane")" 0.95)"
done
rss=$(($(median "${dump_rss[@]}") / 1024)) rrss=$(($(median "${restore_rss[@]}") / 1024))
trss=$(($(median "${task_hwm[@]}") / 1024))
most=$rss
for v in "$rrss" "$trss"; do [ "$v" -gt "$most" ] && most=$v; done
figure "$B" "peak RSS, $MIB MiB of GPU memory" \
    "criu dump $rss MiB, criu restore $rrss MiB, the restored task $trss MiB" \
    "max-buffer-size + 64 MiB = $((BUFFER_MIB + 64)) MiB" "at most the limit" \
    "$(at_most "$most" $((BUFFER_MIB + 64)))"
