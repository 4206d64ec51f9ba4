#!/usr/bin/env bash
# bench.kfd_load (issue 55 item 2 on KFD): bench.load's lanes on the user-space KFD driver.
# KFD_LOAD_LANES (8) kfd-driver-workload processes (AMD's thunk, unmodified, scenario_kfd_driver.sh)
# on one two-GPU machine served by kfd-driver, each held at its gate after step 3, dumped by as many
# criu runs started at once with our plugin on the kfd backend, content-encryption=aes-256-gcm and
# content-compression=zstd; the machine is then switched off and on again (a new driver on an
# empty root) and the lanes are restored by as many criu runs at once. Each restored workload
# carries on from its gate, checking every byte of its VRAM, GTT and userptr buffers at each step,
# and must end with the checksum of an uninterrupted run. Printed: each lane's dump and restore
# time and criu's peak RSS in each run (peak-rss-run), the bytes of each lane's images (amdgpu-*,
# encrypted and compressed) and the BO contents bytes its restore put back. About 45 s at a load
# average of 14 on two cores: registered only with -DCRIU_AMDGPU_BENCH_KFD_LOAD=ON.
# Each lane (its workload, criu dump and criu restore) runs in a mount namespace of its own with a
# /dev/shm of its own, as each pod of a node has: the thunk's host-wide files there (its named
# semaphore, mapped through a file glibc renamed away, and hsakmt_shared_mem, which any thunk
# program removes when it closes KFD) are dumped by criu as a link /dev/shm/link_remap.ID (a
# renamed file) or recreated at restore as /dev/shm/NAME.cr.ID.ghost (a removed one), ID counted
# from 1 in each dump: eight criu runs at once in one /dev/shm made the same names ("Can't create
# ghost regfile: File exists", "Can't link dev/shm/hsakmt_shared_mem.cr.1.ghost -> ...: No such
# file or directory", one restore removing another's).
# Exits non-zero only when it could not measure (a dump or a restore failed, or a restored process
# did not end well).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/bench_lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
LANES=${KFD_LOAD_LANES:-8}
[[ "$LANES" =~ ^[1-9][0-9]*$ ]] || fail "KFD_LOAD_LANES=$LANES: not a positive number"
PEAK="$BUILD_DIR/bin/peak-rss-run"
B=bench.kfd_load

start_driver --gpus 2
reference_run

KEYS=$WORK/keys
mkdir -m 0700 "$KEYS"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=criu-amdgpu-bench-kfd-load \
    -keyout "$KEYS/checkpoint.key" -out "$KEYS/checkpoint.crt" 2>/dev/null ||
    fail "openssl could not make a key and certificate"
chmod 0600 "$KEYS"/*
export CRIU_AMDGPU_CONTENT_CERTIFICATE=$KEYS/checkpoint.crt CRIU_AMDGPU_CONTENT_ENCRYPTION=aes-256-gcm
export CRIU_AMDGPU_CONTENT_COMPRESSION=zstd CRIU_AMDGPU_CONTENT_PRIVATE_KEY=$KEYS/checkpoint.key

# lane_namespace I: lane I's mount namespace, held by a process (LANE_NS[I]) with a tmpfs on
# /dev/shm.
declare -A LANE_NS=()
lane_namespace() {
    unshare --mount --propagation private /bin/sh -c \
        'mount -t tmpfs -o mode=1777,size=64m lane-shm /dev/shm && echo ready && exec sleep 100000' \
        >"$WORK/ns-$1.out" 2>&1 &
    LANE_NS[$1]=$!
    STARTED_PIDS+=("$!")
    wait_for_line "$WORK/ns-$1.out" "^ready$" 20
}
# in_lane I CMD...: CMD in lane I's mount namespace.
in_lane() {
    local i=$1
    shift
    nsenter -t "${LANE_NS[$i]}" -m -- "$@"
}

# start_lane I: lane I's workload, in its mount namespace, in a folder of its own (bench_load.sh's start_lane says why),
# output $WORK/out-I.txt, gated after step 3 (go-I) and at its end (end-I); sets LANE_PID.
start_lane() {
    mkdir -p "$WORK/cwd-$1"
    rm -f "$WORK/go-$1" "$WORK/end-$1"
    lane_namespace "$1"
    WORKLOAD_MOUNT_NS=${LANE_NS[$1]} WORKLOAD_DIR=$WORK/cwd-$1 start_workload "$WORK/out-$1.txt" env LD_PRELOAD="$PRELOAD" \
        "$DRIVER_DIR/kfd-driver-workload" --steps "$STEPS" --wait-at 3 --go-file "$WORK/go-$1" \
        --end-file "$WORK/end-$1"
    LANE_PID=$WPID
}

# timed_criu I VERB ARGS...: criu VERB ARGS of lane I under peak-rss-run, in its namespace; writes "STATUS SECONDS"
# to $WORK/I.VERB.time and peak-rss-run's line to $WORK/I.VERB.peak.
timed_criu() {
    local i=$1 verb=$2 t0 rc=0
    shift 2
    t0=$(now)
    in_lane "$i" "$PEAK" "$CRIU" "$verb" "$@" -L "$PLUGIN_DIR" -v4 -o "$verb.log" --link-remap \
        2>"$WORK/$i.$verb.peak" || rc=$?
    echo "$rc $(seconds_since "$t0")" >"$WORK/$i.$verb.time"
}

# lanes_at_once VERB: criu VERB of every lane at once; sets WALL, RUN_S and RUN_KIB (each run's
# seconds and criu's peak RSS). A failed run fails the bench, naming its log's first errors.
lanes_at_once() {
    local verb=$1 i t0 rc s kib runs=()
    t0=$(now)
    for i in $(seq "$LANES"); do
        if [ "$verb" = dump ]; then
            timed_criu "$i" dump -t "${lane_pids[i - 1]}" -D "$WORK/img-$i" &
        else
            timed_criu "$i" restore -D "$WORK/img-$i" -d --pidfile "$WORK/img-$i/pid" &
        fi
        runs+=($!)
    done
    wait "${runs[@]}" # these only: the driver runs on in the background
    WALL=$(seconds_since "$t0")
    # Every process restored goes at exit, also when another lane's restore failed.
    if [ "$verb" = restore ]; then
        for i in $(seq "$LANES"); do
            [ ! -s "$WORK/img-$i/pid" ] || STARTED_PIDS+=("$(cat "$WORK/img-$i/pid")")
        done
    fi
    RUN_S=() RUN_KIB=()
    for i in $(seq "$LANES"); do
        read -r rc s <"$WORK/$i.$verb.time"
        [ "$rc" = 0 ] ||
            fail "lane $i: criu $verb failed (status $rc): $(grep -a -m3 Error "$WORK/img-$i/$verb.log")"
        kib=$(peak_rss_kib "$WORK/$i.$verb.peak")
        [ -n "$kib" ] || fail "lane $i: no peak RSS of criu $verb"
        RUN_S+=("$s") RUN_KIB+=("$kib")
    done
}

lane_pids=()
for i in $(seq "$LANES"); do
    start_lane "$i"
    lane_pids+=("$LANE_PID")
done
for i in $(seq "$LANES"); do
    wait_for_line "$WORK/out-$i.txt" "^waiting for $WORK/go-$i$" 60
    mkdir -p "$WORK/img-$i"
done
lanes_at_once dump
dump_wall=$WALL dump_s=("${RUN_S[@]}") dump_kib=("${RUN_KIB[@]}")
bytes=()
for i in $(seq "$LANES"); do
    wait_gone "${lane_pids[i - 1]}" 10
    claimed "$WORK/img-$i/dump.log"
    n=$(ls "$WORK/img-$i" | grep -c '^amdgpu-packed-kfd-bo-' || true)
    [ "$n" -gt 0 ] || fail "lane $i: no packed (encrypted, compressed) BO contents file"
    ls "$WORK/img-$i" | grep -q '^amdgpu-pages-' && fail "lane $i: contents under CRIU's own pages files"
    bytes+=("$(cat "$WORK/img-$i"/amdgpu-* | wc -c)")
done

end_driver
start_driver --gpus 2
lanes_at_once restore
restore_wall=$WALL restore_s=("${RUN_S[@]}") restore_kib=("${RUN_KIB[@]}")

t0=$(now)
for i in $(seq "$LANES"); do touch "$WORK/go-$i"; done
for i in $(seq "$LANES"); do
    wait_for_line "$WORK/out-$i.txt" "^waiting for $WORK/end-$i$" 60
    touch "$WORK/end-$i"
done
for i in $(seq "$LANES"); do
    wait_gone "$(cat "$WORK/img-$i/pid")" 30
    grep -q '^done$' "$WORK/out-$i.txt" ||
        fail "lane $i: the restored workload failed: $(tail -3 "$WORK/out-$i.txt")"
    got=$(awk '/^checksum /{print $2}' "$WORK/out-$i.txt")
    [ "$got" = "$EXPECTED" ] || fail "lane $i: checksum after restore $got, uninterrupted run $EXPECTED"
done
tail_s=$(seconds_since "$t0")
restored=()
for i in $(seq "$LANES"); do
    restored+=("$(grep -aoE 'BO contents restored: [0-9]+ bytes' "$WORK/img-$i/restore.log" |
        awk '{ n += $4 } END { print n + 0 }')")
    [ "${restored[i - 1]}" -gt 0 ] || fail "lane $i: the restore's log shows no BO contents restored"
done
no_processes_left
end_driver

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
largest() { printf '%s\n' "$@" | sort -g | tail -1; }
echo "$B: criu $CRIU_VERSION, $LANES kfd-driver-workload processes (AMD's thunk) on a two-GPU" \
    "user-space KFD machine, dumped at step 3 of $STEPS, aes-256-gcm + zstd ($(conditions))"
printf '  %-5s %10s %14s %12s %16s %14s %14s\n' lane "dump (s)" "dump RSS MiB" "restore (s)" \
    "restore RSS MiB" "image bytes" "BO bytes back"
for i in $(seq "$LANES"); do
    printf '  %-5s %10s %14s %12s %16s %14s %14s\n' "$i" "${dump_s[i - 1]}" "$(mib "${dump_kib[i - 1]}")" \
        "${restore_s[i - 1]}" "$(mib "${restore_kib[i - 1]}")" "${bytes[i - 1]}" "${restored[i - 1]}"
done
echo "  every dump at once: $dump_wall s; every restore at once: $restore_wall s; the restored" \
    "processes' last steps: $tail_s s"
echo "  every lane restored, checked every byte of its VRAM, GTT and userptr buffers at each step" \
    "to step $STEPS and finished with checksum $EXPECTED"
figure "$B" "$LANES KFD dumps at once, criu $CRIU_VERSION" \
    "slowest lane $(largest "${dump_s[@]}") s, median $(median "${dump_s[@]}") s" \
    "peak RSS $(mib "$(largest "${dump_kib[@]}")") MiB" "-" "measured"
figure "$B" "$LANES KFD restores at once, criu $CRIU_VERSION" \
    "slowest lane $(largest "${restore_s[@]}") s, median $(median "${restore_s[@]}") s" \
    "peak RSS $(mib "$(largest "${restore_kib[@]}")") MiB" "-" "measured"
