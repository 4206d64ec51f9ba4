#!/usr/bin/env bash
# bench.vs_upstream: CRIU's own amdgpu plugin (UPSTREAM_PLUGIN, built unmodified by
# upstream_plugin.prepare) and ours, side by side under the same real criu, on the same
# user-space KFD driver and the same workload: kfd-driver-workload (AMD's thunk) with N more VRAM
# BOs of K KiB (--extra-bos, --extra-bo-kib), dumped at a gate and restored on a machine switched
# off and on again, each plugin at its defaults (ours: CRIU's layout, pages files). For each row
# the two sides' runs alternate (upstream first in odd runs, ours first in even ones), and each
# figure is the median of VS_UPSTREAM_RUNS runs (3 by default): criu's dump time, its restore time,
# criu's peak RSS (peak-rss-run, the larger of dump and restore) and the bytes the plugin's images
# take on disk (amdgpu-*). CRIU's plugin is run through libkfd_driver_criu_preload.so, preloaded
# into criu; ours reaches the driver with option kfd-driver.
#
# Restore: each side's whole restore, from criu's start to its exit (the process restored and
# running), and of each the part that is the plugin's by criu's log (plugin_dump_s,
# plugin_restore_s); after it the restored workload goes on, checking every byte of every BO, and must end
# well. Both sides run in the mount namespace of kfd_device_paths.sh, where the driver's devices
# lie at /dev/kfd and /dev/dri/renderD<N> (CRIU's plugin moves device mappings only of those
# paths).
#
# Rows: VS_UPSTREAM_ROWS, "NxK" each (N extra BOs of K KiB); CI's default, "16x1024", with 3 runs
# takes about 30 s on an idle machine (-DCRIU_AMDGPU_BENCH_VS_UPSTREAM_GIB=ON adds "16x65536", 1 GiB;
# about 7 minutes). A larger grid by hand, e.g.
#   VS_UPSTREAM_ROWS="1x262144 16x16384 256x4096 2048x512" VS_UPSTREAM_RUNS=5 ctest -R bench.vs_upstream -V
# Parallel restore: each row says how each side restored the contents ("serial", or "parallel":
# in criu's main process while criu restores the rest, CRIU's plugin's POST_FORKING thread or our
# option parallel-restore, e.g. CRIU_AMDGPU_PARALLEL_RESTORE=true in the environment). Debian's
# CRIU plugins (4.1.1, 4.2.1) restore serially; UPSTREAM_PLUGIN may name one built by hand that
# does not (README: "Beside CRIU's own plugin"). VS_UPSTREAM_KEEP_LOGS=DIR keeps each run's criu
# logs and each row's raw figures there.
# Exits non-zero only when it could not measure (a dump or a restore failed, or a restored process
# did not end well).
source "$(dirname "$0")/kfd_device_paths.sh" # both sides: the devices at their /dev paths
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bench_lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
RUNS=${VS_UPSTREAM_RUNS:-3}
ROWS=${VS_UPSTREAM_ROWS:-"16x1024"}
PEAK="$BUILD_DIR/bin/peak-rss-run"
[ -f "${UPSTREAM_PLUGIN:-}" ] ||
    fail "UPSTREAM_PLUGIN=${UPSTREAM_PLUGIN:-}: no upstream plugin (upstream_plugin.prepare builds it)"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || fail "VS_UPSTREAM_RUNS=$RUNS: not a positive number"

# cycle SIDE N KIB RUN: one dump and restore by SIDE (upstream or ours); appends
# "DUMP_S RESTORE_S PEAK_KIB BYTES" to $WORK/SIDE.txt.
cycle() {
    local side=$1 n=$2 kib=$3 run=$4 img="$WORK/img-$1-$2x$3-$4" t0 dump_s restore_s rc=0
    start_driver
    rm -f "$WORK/go" "$WORK/end"
    start_workload "$WORK/out.txt" env LD_PRELOAD="$PRELOAD" "$DRIVER_DIR/kfd-driver-workload" \
        --steps 2 --wait-at 1 --go-file "$WORK/go" --end-file "$WORK/end" --extra-bos "$n" \
        --extra-bo-kib "$kib"
    wait_for_line "$WORK/out.txt" "^waiting for $WORK/go$" 60
    mkdir -p "$img"
    sync
    t0=$(now)
    if [ "$side" = upstream ]; then
        env LD_PRELOAD="$DRIVER_DIR/libkfd_driver_criu_preload.so" "$PEAK" "$CRIU" dump -t "$WPID" \
            -D "$img" -L "$UPSTREAM_DIR" -v4 -o dump.log --link-remap 2>"$img/peak-dump" ||
            fail "criu dump with CRIU's plugin failed ($img/dump.log)"
    else
        "$PEAK" "$CRIU" dump -t "$WPID" -D "$img" -L "$PLUGIN_DIR" -v4 -o dump.log --link-remap \
            2>"$img/peak-dump" || fail "criu dump with ours failed ($img/dump.log)"
    fi
    dump_s=$(seconds_since "$t0")
    wait_gone "$WPID" 10
    local bytes
    bytes=$(allocated_bytes "$img"/amdgpu-*)
    end_driver
    start_driver
    sync
    t0=$(now)
    if [ "$side" = upstream ]; then
        env LD_PRELOAD="$DRIVER_DIR/libkfd_driver_criu_preload.so" "$PEAK" "$CRIU" restore -D "$img" \
            -L "$UPSTREAM_DIR" -v4 -o restore.log -d --pidfile "$img/restored.pid" --link-remap \
            2>"$img/peak-restore" || fail "criu restore with CRIU's plugin failed ($img/restore.log)"
    else
        "$PEAK" "$CRIU" restore -D "$img" -L "$PLUGIN_DIR" -v4 -o restore.log -d \
            --pidfile "$img/restored.pid" --link-remap 2>"$img/peak-restore" ||
            fail "criu restore with ours failed ($img/restore.log)"
    fi
    restore_s=$(seconds_since "$t0")
    [ "$side" != upstream ] || upstream_restored "$img/restore.log"
    local mode=serial
    if grep -qE "amdgpu_plugin: Begin to send parallel restore cmd|kfd: BO contents of .* handed to criu's main process" \
        "$img/restore.log"; then
        mode=parallel
    fi
    RPID=$(cat "$img/restored.pid")
    STARTED_PIDS+=("$RPID")
    touch "$WORK/go" "$WORK/end"
    wait_gone "$RPID" 60
    grep -q '^done$' "$WORK/out.txt" || fail "the workload restored by $side failed: $(tail -3 "$WORK/out.txt")"
    end_driver
    local peak_dump peak_restore
    peak_dump=$(peak_rss_kib "$img/peak-dump")
    peak_restore=$(peak_rss_kib "$img/peak-restore")
    local plugin_s plugin_dump
    plugin_s=$(plugin_restore_s "$img/restore.log")
    plugin_dump=$(plugin_dump_s "$img/dump.log")
    echo "$dump_s $restore_s $((peak_dump > peak_restore ? peak_dump : peak_restore)) $bytes $mode $plugin_s $plugin_dump" >>"$WORK/$side.txt"
    if [ -n "${VS_UPSTREAM_KEEP_LOGS:-}" ]; then
        mkdir -p "$VS_UPSTREAM_KEEP_LOGS/$side-${n}x${kib}-$run"
        cp "$img/dump.log" "$img/restore.log" "$VS_UPSTREAM_KEEP_LOGS/$side-${n}x${kib}-$run/"
    fi
    rm -rf "$img"
}

# plugin_restore_s LOG: the seconds of criu's restore (LOG, -v4) that are the plugin's, by criu's
# own clock: from its first RESTORE_EXT_FILE (hook 3) to its first UPDATE_VMA_MAP (hook 8): the
# KFD and render-node files with the BO contents of a serial restore; and from RESUME_DEVICES_LATE
# (hook 9) to the end: the resume, after a parallel restore's wait for its contents. The rest of a
# restore is criu's, the same for both plugins.
plugin_restore_s() {
    awk -F'[()]' '/^\(/ { t = $2 + 0 }
        /plugin: `amdgpu_plugin. hook 3 ->/ && !f { f = t }
        /plugin: `amdgpu_plugin. hook 8 ->/ && !v { v = t }
        /plugin: `amdgpu_plugin. hook 9 ->/ && !r { r = t }
        END { if (!f || !v || !r) exit 1; printf "%.3f", (v - f) + (t - r) }' "$1" ||
        fail "$1: no RESTORE_EXT_FILE, UPDATE_VMA_MAP or RESUME_DEVICES_LATE of the plugin in criu's log"
}
# plugin_dump_s LOG: the seconds of criu's dump (LOG, -v4) spent in the plugin's hooks, by criu's
# own clock: each call from criu's line naming it to criu's next line that is not the plugin's
# (ours: "amdgpu: ...", CRIU's: "amdgpu_plugin: ...").
plugin_dump_s() {
    awk -F'[()]' '/^\(/ {
            t = $2 + 0
            if (start != "" && $0 !~ /\) +(amdgpu|amdgpu_plugin): /) { sum += t - start; start = "" }
            if ($0 ~ /plugin: `amdgpu_plugin. hook [0-9]+ ->/) start = t
        }
        END { if (!calls && sum == 0) exit 1; printf "%.3f", sum }
        /plugin: `amdgpu_plugin. hook [0-9]+ ->/ { calls++ }' "$1" ||
        fail "$1: no hook of the plugin in criu's log"
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
# row_figure WHAT OURS UPSTREAMS UNIT TARGET: the figure of ours against CRIU's plugin, met when
# their ratio is at most TARGET.
row_figure() {
    local r verdict
    r=$(ratio "$2" "$3")
    verdict=$(awk -v r="$r" -v t="$5" 'BEGIN { print (r <= t) ? "met" : "NOT met" }')
    figure bench.vs_upstream "$1" "ours $2 $4: $r x" "CRIU's plugin $3 $4" "at most $5 x" "$verdict"
}
# column SIDE K: the median of column K of SIDE's runs.
column() { median $(awk -v k="$2" '{ print $k }' "$WORK/$1.txt"); }
# modes SIDE: how SIDE's runs restored the contents ("serial", "parallel", or both).
modes() { awk '{ print $5 }' "$WORK/$1.txt" | sort -u | paste -sd/; }

echo "bench.vs_upstream: $(conditions); criu $CRIU_VERSION; CRIU's plugin: $(cat "$(dirname "$UPSTREAM_PLUGIN")/VERSION" 2>/dev/null || echo "$UPSTREAM_PLUGIN"); medians of $RUNS interleaved runs"
printf '%-12s | %-23s | %-31s | %-23s | %-25s\n' "extra BOs" "dump s (ours/upstream)" \
    "restore s (ours/upstream)" "criu peak RSS MiB" "plugin images MiB"
for row in $ROWS; do
    [[ "$row" =~ ^([0-9]+)x([0-9]+)$ ]] || fail "VS_UPSTREAM_ROWS: $row is not NxK (N BOs of K KiB)"
    n=${BASH_REMATCH[1]} kib=${BASH_REMATCH[2]}
    rm -f "$WORK/upstream.txt" "$WORK/ours.txt"
    for run in $(seq "$RUNS"); do
        if [ $((run % 2)) = 1 ]; then
            cycle upstream "$n" "$kib" "$run"
            cycle ours "$n" "$kib" "$run"
        else
            cycle ours "$n" "$kib" "$run"
            cycle upstream "$n" "$kib" "$run"
        fi
    done
    if [ -n "${VS_UPSTREAM_KEEP_LOGS:-}" ]; then
        cp "$WORK/upstream.txt" "$VS_UPSTREAM_KEEP_LOGS/raw-upstream-${n}x${kib}.txt"
        cp "$WORK/ours.txt" "$VS_UPSTREAM_KEEP_LOGS/raw-ours-${n}x${kib}.txt"
    fi
    echo "${n}x${kib}KiB: restores ours $(modes ours), CRIU's plugin $(modes upstream)"
    ud=$(column upstream 1) od=$(column ours 1) ur=$(column upstream 2) or=$(column ours 2)
    urss=$(column upstream 3) orss=$(column ours 3) ub=$(column upstream 4) ob=$(column ours 4)
    printf '%-12s | %6s / %6s = %5s | %6s / %6s = %5s        | %5s / %5s = %5s | %6s / %6s = %5s\n' \
        "${n}x${kib}KiB" "$od" "$ud" "$(ratio "$od" "$ud")" "$or" "$ur" "$(ratio "$or" "$ur")" \
        "$((orss / 1024))" "$((urss / 1024))" "$(ratio "$orss" "$urss")" "$(mib "$ob")" "$(mib "$ub")" \
        "$(ratio "$ob" "$ub")"
    upr=$(column upstream 6) opr=$(column ours 6) upd=$(column upstream 7) opd=$(column ours 7)
    echo "${n}x${kib}KiB: the plugin's part (criu's clock) of the dump: $opd / $upd s = $(ratio "$opd" "$upd"), of the restore: $opr / $upr s = $(ratio "$opr" "$upr")"
    # One line per figure for the README's table (bench_lib.sh's figure): ours against CRIU's
    # plugin, the issue's targets (0.7 x the time, no more memory or bytes).
    row_figure "dump time, ${n} BOs of ${kib} KiB" "$od" "$ud" s 0.7
    row_figure "the plugin's part of the dump, ${n} BOs of ${kib} KiB" "$opd" "$upd" s 0.7
    restore_what="restore time"
    [ "$(modes ours)$(modes upstream)" = serialserial ] ||
        restore_what="restore time (ours $(modes ours), CRIU's plugin $(modes upstream))"
    row_figure "$restore_what, ${n} BOs of ${kib} KiB" "$or" "$ur" s 0.7
    row_figure "the plugin's part of the restore, ${n} BOs of ${kib} KiB" "$opr" "$upr" s 0.7
    row_figure "criu's peak RSS, ${n} BOs of ${kib} KiB" "$orss" "$urss" KiB 1
    row_figure "bytes of the plugin's images, ${n} BOs of ${kib} KiB" "$(mib "$ob")" "$(mib "$ub")" MiB 1
done
