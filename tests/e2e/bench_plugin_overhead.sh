#!/usr/bin/env bash
# Benchmark (label bench): what installing the plugin costs criu on a process that uses no GPU.
# The same process is dumped with --leave-running, pair by pair, once with criu loading the
# plugin directory and once with an empty one (the order alternates from pair to pair), and the
# wall time of each criu run is printed, then the medians and their ratio (target: 1.02 or
# less). Exits non-zero only when it could not measure.
source "$(dirname "$0")/lib.sh"
PAIRS=${BENCH_PAIRS:-20}
EMPTY="$WORK/no-plugins"
mkdir -p "$EMPTY"
start_workload /dev/null "$BUILD_DIR/tests/e2e/e2e-cpu-workload" --steps 1000000 --step-ms 50
sleep 0.3

# dump_us DIR: microseconds of one criu dump --leave-running loading the plugins in DIR.
dump_us() {
    local img="$WORK/img" t0 t1
    rm -rf "$img"
    mkdir -p "$img"
    t0=$(date +%s%N)
    "$CRIU" dump -t "$WPID" -D "$img" -L "$1" --leave-running -o dump.log >/dev/null 2>&1 ||
        fail "criu dump --leave-running failed with -L $1: $(grep -E 'Error' "$img/dump.log" | tail -3)"
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000))
}
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

dump_us "$PLUGIN_DIR" >/dev/null # warm the page cache for both
dump_us "$EMPTY" >/dev/null
WITH=() WITHOUT=()
echo "criu $CRIU_VERSION: dump --leave-running of a process without GPU (wall time, ms)"
for i in $(seq "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then
        w=$(dump_us "$PLUGIN_DIR"); o=$(dump_us "$EMPTY")
    else
        o=$(dump_us "$EMPTY"); w=$(dump_us "$PLUGIN_DIR")
    fi
    WITH+=("$w") WITHOUT+=("$o")
    awk -v i="$i" -v w="$w" -v o="$o" 'BEGIN {printf "pair %2d: with plugin %7.1f  without %7.1f  ratio %.3f\n", i, w / 1000, o / 1000, w / o}'
done
mw=$(printf '%s\n' "${WITH[@]}" | median)
mo=$(printf '%s\n' "${WITHOUT[@]}" | median)
awk -v w="$mw" -v o="$mo" -v n="$PAIRS" 'BEGIN {printf "median of %d pairs: with plugin %.1f ms, without %.1f ms, ratio %.3f (target <= 1.02)\n", n, w / 1000, o / 1000, w / o}'
