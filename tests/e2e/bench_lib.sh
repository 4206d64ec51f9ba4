# Helpers of the benchmarks with real criu (bench_*.sh), on top of lib.sh.

# now: seconds since the epoch, with nanoseconds.
now() { date +%s.%N; }

# seconds_since T0: elapsed seconds, 3 decimals.
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

# mib_per_s BYTES SECONDS
mib_per_s() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.1f", (s > 0 ? n / s / 1048576 : 0) }'; }

# ratio A B: A / B, 2 decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# median V...: the median of the values.
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# fastest V...: the least of the values (seconds): what a figure that writes to the disk compares,
# each side's fastest run, for the reason tests/bench/bench_util.h's fastest() gives.
fastest() { printf '%s\n' "$@" | sort -g | head -1; }

# lane_seconds LOG VERB: the seconds of every lane summary "BO contents VERB: N bytes in S s",
# summed, and their bytes: "BYTES SECONDS".
lane_totals() {
    grep -oE "BO contents $2: [0-9]+ bytes in [0-9.]+ s" "$1" |
        awk '{ b += $4; s += $7 } END { printf "%d %.3f\n", b, s }'
}

# peak_rss_kib FILE: what peak-rss-run wrote.
peak_rss_kib() { awk '/^peak_rss_kib/ { print $2 }' "$1" | tail -1; }

conditions() { echo "load average $(cut -d' ' -f1 /proc/loadavg) over $(nproc) CPUs, $(df -hT "$WORK" | awk 'NR==2 { print $2 }') at $WORK"; }

# at_least VALUE TARGET: "met" when VALUE >= TARGET, else "NOT met".
at_least() { awk -v v="$1" -v t="$2" 'BEGIN { print (v >= t ? "met" : "NOT met") }'; }

# at_most VALUE TARGET: "met" when VALUE <= TARGET, else "NOT met".
at_most() { awk -v v="$1" -v t="$2" 'BEGIN { print (v <= t ? "met" : "NOT met") }'; }

# figure BENCH WHAT VALUE LIMIT TARGET VERDICT: one figure for the README's table
# (scripts/bench-table.py; the same format as benchutil::figure in tests/bench/bench_util.h).
figure() { printf 'figure\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@"; }
