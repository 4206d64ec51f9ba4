#!/usr/bin/env bash
# Benchmark (label bench): what installing the plugin costs criu on a process that uses no GPU.
# The same process is dumped with --leave-running, pair by pair, once with criu loading the
# plugin directory and once with an empty one (the order alternates from pair to pair). Each pair
# prints criu's wall time and CPU time (user + system) with and without the plugin; the end
# prints the medians and their ratios (target for wall time: 1.02 or less), and the time criu
# spends loading and initialising its plugins, from the timestamps of criu's own log. On a busy
# machine the wall times of single runs scatter far more than the plugin costs: the CPU times and
# criu's log tell more. Exits non-zero only when it could not measure.
source "$(dirname "$0")/lib.sh"
PAIRS=${BENCH_PAIRS:-20}
EMPTY="$WORK/no-plugins"
mkdir -p "$EMPTY"
start_workload /dev/null "$BUILD_DIR/tests/e2e/e2e-cpu-workload" --steps 1000000 --step-ms 50
sleep 0.3

# dump_ms DIR: "WALL CPU PLUGINS" in milliseconds of one criu dump --leave-running loading DIR's
# plugins; PLUGINS is the time from criu's "Running pre-dump scripts" to its next line that is
# not the plugin's (loading and initialising the plugins).
dump_ms() {
    local img="$WORK/img" t p rc=0
    rm -rf "$img"
    mkdir -p "$img"
    t=$({ TIMEFORMAT='%3R %3U %3S'; time "$CRIU" dump -t "$WPID" -D "$img" -L "$1" \
        --leave-running -v4 -o dump.log >/dev/null 2>&1 || rc=$?; } 2>&1)
    [ "$rc" = 0 ] ||
        fail "criu dump --leave-running failed with -L $1: $(grep -E 'Error' "$img/dump.log" | tail -3)"
    p=$(awk -F'[()]' '/Running pre-dump scripts/ {t0 = $2; next}
                      t0 != "" && !/amdgpu|Plugin "/ {printf "%.3f", ($2 - t0) * 1000; exit}' \
        "$img/dump.log")
    [ -n "$p" ] || fail "criu's log does not show when the plugins were loaded"
    awk -v p="$p" '{printf "%.1f %.1f %s\n", $1 * 1000, ($2 + $3) * 1000, p}' <<<"$t"
}
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

dump_ms "$PLUGIN_DIR" >/dev/null # warm the page cache for both
dump_ms "$EMPTY" >/dev/null
: >"$WORK/pairs"
echo "criu $CRIU_VERSION: dump --leave-running of a process without GPU (ms)"
for i in $(seq "$PAIRS"); do
    if [ $((i % 2)) = 1 ]; then
        w=$(dump_ms "$PLUGIN_DIR"); o=$(dump_ms "$EMPTY")
    else
        o=$(dump_ms "$EMPTY"); w=$(dump_ms "$PLUGIN_DIR")
    fi
    echo "$w $o" >>"$WORK/pairs"
    awk -v i="$i" '{printf "pair %2d: with plugin wall %6.1f cpu %5.1f plugins %6.3f   without wall %6.1f cpu %5.1f plugins %6.3f   wall ratio %.3f\n", i, $1, $2, $3, $4, $5, $6, $1 / $4}' <<<"$w $o"
done
column_median() { awk -v c="$1" '{print $c}' "$WORK/pairs" | median; }
ww=$(column_median 1) wc=$(column_median 2) wp=$(column_median 3)
ow=$(column_median 4) oc=$(column_median 5) op=$(column_median 6)
pr=$(awk '{print $1 / $4}' "$WORK/pairs" | median)
awk -v n="$PAIRS" -v ww="$ww" -v ow="$ow" -v wc="$wc" -v oc="$oc" -v wp="$wp" -v op="$op" -v pr="$pr" 'BEGIN {
    printf "medians of %d pairs: wall %.1f ms with the plugin, %.1f without: ratio %.3f (target <= 1.02; median of the pair ratios %.3f)\n", n, ww, ow, ww / ow, pr
    printf "                     cpu  %.1f ms with the plugin, %.1f without: ratio %.3f\n", wc, oc, wc / oc
    printf "                     criu loading its plugins: %.3f ms with the plugin, %.3f without\n", wp, op }'
