# Shared steps of the e2e scenarios on the user-space KFD driver (tests/kfd/DRIVER.md):
# kfd-driver-workload, an unmodified program on Debian's libhsakmt, on a machine served by
# kfd-driver at ROOT, dumped and restored by real criu with our plugin on the kfd backend, or
# with CRIU's own amdgpu plugin (UPSTREAM_PLUGIN) instead of ours. Sourced after lib.sh by
# scenario_kfd_driver*.sh and bench_vs_upstream.sh.
DRIVER_DIR=$BUILD_DIR/tests/kfd/driver
PRELOAD=$DRIVER_DIR/libkfd_driver_preload.so
ROOT=$WORK/kfd-machine # the driver's root: root-owned and not world-writable, as kfd-driver wants
STEPS=8
# GATES: where the workload's output (out.txt) and its gate files (go, end) lie: the work folder,
# or a folder of it a container is given (a CRI mount binds recursively, and the work folder holds
# containerd's own mounts).
GATES=$WORK
export CRIU_AMDGPU_KFD_DRIVER=$ROOT CRIU_AMDGPU_KFD_SYSFS_ROOT=$ROOT/sysfs

# start_driver ARGS...: a new machine at ROOT (its driver, on an empty root); sets DRIVER_PID.
start_driver() {
    rm -rf "$ROOT"
    mkdir -m 755 "$ROOT"
    # Emptied before the driver starts: its own redirection happens in the child, after which
    # wait_for_line could already have found the "ready" of the machine before (bench.vs_upstream
    # starts one per run; a race seen in a cold CI run: memory.node not there yet).
    : >"$WORK/driver.out"
    "$DRIVER_DIR/kfd-driver" "$ROOT" "$@" >>"$WORK/driver.out" 2>&1 &
    DRIVER_PID=$!
    STARTED_PIDS+=("$DRIVER_PID")
    wait_for_line "$WORK/driver.out" "^ready loop" 20
    # In the namespace of kfd_device_paths.sh, the machine's devices at their /dev paths.
    [ "${DEVICE_PATHS:-0}" != 1 ] || place_device_nodes "$ROOT"
}
# end_driver: the machine is switched off (its loop device goes with its driver).
end_driver() {
    kill -TERM "$DRIVER_PID"
    wait "$DRIVER_PID" || fail "kfd-driver ended with status $?: $(cat "$WORK/driver.out")"
}
# query PID: the driver's state of process PID (kfd-driver-query: its pause, queues and events).
query() { "$DRIVER_DIR/kfd-driver-query" "$ROOT" "$1" || fail "the driver has nothing of process $1"; }
# workload ARGS...: the workload on the machine, the thunk's calls through the driver's interposer.
workload() { env LD_PRELOAD="$PRELOAD" "$DRIVER_DIR/kfd-driver-workload" "$@"; }
# start_gated_workload ARGS...: the workload in its own pid namespace (start_workload), output in
# $GATES/out.txt, stepping to STEPS with a gate after step 3 ($GATES/go) and at the end
# ($GATES/end), ARGS before them (more gates); sets WPID.
start_gated_workload() {
    rm -f "$GATES/go" "$GATES/end"
    start_workload "$GATES/out.txt" env LD_PRELOAD="$PRELOAD" "$DRIVER_DIR/kfd-driver-workload" \
        --steps "$STEPS" "$@" --wait-at 3 --go-file "$GATES/go" --end-file "$GATES/end"
}
# reference_run: EXPECTED becomes the checksum of an uninterrupted run on the machine.
reference_run() {
    EXPECTED=$(workload --steps "$STEPS" | awk '/^checksum /{print $2}')
    [ -n "$EXPECTED" ] || fail "the uninterrupted run printed no checksum"
}

# run_to_gate DRIVER_ARGS...: a new machine (start_driver DRIVER_ARGS), EXPECTED from an
# uninterrupted run on it, and the workload started (WPID) and waiting at its gate after step 3,
# USERPTR_DUMPED the digest of its userptr bytes there.
run_to_gate() {
    start_driver "$@"
    reference_run
    start_gated_workload
    wait_for_line "$GATES/out.txt" "^waiting for $GATES/go$" 20
    USERPTR_DUMPED=$(userptr_digest "$WPID")
}

# userptr_digest PID: the SHA-256 of the workload's userptr buffer (its "userptr ADDR SIZE" line)
# as PID's memory holds it, read from outside the process (/proc/PID/mem).
userptr_digest() {
    local addr size
    read -r _ addr size < <(grep '^userptr ' "$GATES/out.txt")
    [ -n "$size" ] || fail "the workload printed no userptr buffer"
    dd if="/proc/$1/mem" bs=4096 skip=$((addr / 4096)) count=$((size / 4096)) 2>/dev/null |
        sha256sum | awk '{print $1}'
}

# claimed LOG: the plugin claimed the workload's /dev/kfd and render node in the dump of LOG.
claimed() {
    require_core "$1"
    grep -q "kfd: file $ROOT/files/[0-9]*/kfd (id [0-9]*) claimed" "$1" ||
        fail "the plugin did not claim the workload's /dev/kfd ($1)"
    grep -q "kfd: file $ROOT/files/[0-9]*/renderD[0-9]* (id [0-9]*) claimed" "$1" ||
        fail "the plugin did not claim the workload's render node ($1)"
}

# In kfd_device_paths.sh's namespace every criu, with our plugin too, runs with the driver's criu
# preload: criu's own stat of a mapping of /dev/kfd or /dev/dri/renderD<N> then says what a ROCm
# machine's says (the character device the driver answers, not the block node of the machine's
# memory that lies there), so that a dump by one plugin and a restore by the other agree on the
# mapped file's mode, which criu checks when it opens the path again (criu 4.3: "File dev/kfd has
# bad mode 020666 (expect 060666)" when only the restore was preloaded).
if [ "${DEVICE_PATHS:-0}" = 1 ]; then
    printf '#!/bin/sh\nLD_PRELOAD=%q exec %q "$@"\n' "$DRIVER_DIR/libkfd_driver_criu_preload.so" "$CRIU" \
        >"$WORK/criu-on-driver"
    chmod 755 "$WORK/criu-on-driver"
    CRIU=$WORK/criu-on-driver
fi

# upstream_criu ARGS...: criu with CRIU's own plugin, alone in its folder, the driver's preload
# in criu.
UPSTREAM_DIR=$WORK/upstream-plugin
mkdir -p "$UPSTREAM_DIR"
[ -z "${UPSTREAM_PLUGIN:-}" ] || ln -s "$UPSTREAM_PLUGIN" "$UPSTREAM_DIR/amdgpu_plugin.so"
upstream_criu() { env LD_PRELOAD="$DRIVER_DIR/libkfd_driver_criu_preload.so" "$CRIU" "$@" -L "$UPSTREAM_DIR"; }
# upstream_claimed LOG: CRIU's plugin dumped the workload's /dev/kfd and render node.
upstream_claimed() {
    grep -q 'Plugin "amdgpu_plugin" (version 512 hooks' "$1" || fail "criu did not load CRIU's plugin ($1)"
    grep -q "amdgpu_plugin: Dump successful" "$1" || fail "CRIU's plugin did not dump the KFD file ($1)"
    grep -q "amdgpu_plugin: amdgpu-renderD-[0-9]*.img:Opened file for write" "$1" ||
        fail "CRIU's plugin did not dump the render node ($1)"
}
# upstream_restored LOG: CRIU's plugin restored the KFD file, every BO's contents and the render
# node, and moved every device mapping to its restored place (UPDATE_VMA_MAP of /dev/kfd and
# /dev/dri/renderD<N>, the paths criu recorded in kfd_device_paths.sh's namespace), skipping none.
# A plugin with parallel restore (criu-dev's since 4a3a695df, not in Debian's 4.1.1 or 4.2.1)
# restores the contents in a thread of criu's main process (POST_FORKING) instead of the task's:
# the task sends them ("Begin to send parallel restore cmd"), the thread ends well and the server
# closes.
upstream_restored() {
    local log=$1
    if grep -q "amdgpu_plugin: Begin to send parallel restore cmd" "$log"; then
        grep -qE "amdgpu_plugin: Thread\[0x[0-9a-f]+\] finished ret:0" "$log" ||
            fail "CRIU's plugin's parallel restore thread did not restore the BO contents ($log)"
        grep -q "amdgpu_plugin: Close parallel restore server" "$log" ||
            fail "CRIU's plugin did not close its parallel restore server ($log)"
        ! grep -qE "Parallel restore fail|Failed to join parallel thread" "$log" ||
            fail "CRIU's plugin's parallel restore failed ($log)"
    else
        grep -qE "amdgpu_plugin: Thread\[0x[0-9a-f]+\] done num_bos:[1-9][0-9]* ret:0" "$log" ||
            fail "CRIU's plugin did not restore the BO contents ($log)"
    fi
    grep -q "amdgpu_plugin: Restore successful" "$log" || fail "CRIU's plugin did not restore the KFD file ($log)"
    grep -q "amdgpu_plugin: Restoring RenderD amdgpu-renderD-" "$log" ||
        fail "CRIU's plugin did not restore the render node ($log)"
    grep -q "Skipping unsupported path" "$log" &&
        fail "CRIU's plugin skipped a device mapping: $(grep -a 'Skipping unsupported path' "$log" | head -1)"
    grep -qE "New mmap .* fd -1\b" "$log" || fail "criu moved no kfd page (doorbells, MMIO) with CRIU's plugin ($log)"
    grep -qE "New mmap .* fd [0-9]+\b" "$log" || fail "criu moved no render-node BO with CRIU's plugin ($log)"
}

# The thunk maps its named POSIX semaphore through the file glibc made it in and renamed away
# (/dev/shm/sem.XXXXXX, "deleted"): criu dumps such a mapping only with --link-remap, as a link
# /dev/shm/link_remap.ID that the restore removes. One left by a failed run would fail the next
# dump ("Can't link remap ... File exists"): those this run makes go at exit.
REMAPS_BEFORE=$(ls /dev/shm | grep '^link_remap\.' || true)
remove_link_remaps() {
    local f
    for f in $(ls /dev/shm | grep '^link_remap\.' || true); do
        grep -qx "$f" <<<"$REMAPS_BEFORE" || rm -f "/dev/shm/$f"
    done
}
trap 'remove_link_remaps; cleanup' EXIT
# keep_link_remap: REMAP, the link the dump just made of the thunk's semaphore
# (/dev/shm/link_remap.ID), which criu's restore opens, and a copy of its bytes. A restore that
# gets as far as mapping it removes it; put_back_link_remap then serves the next restore.
keep_link_remap() {
    REMAP=$(ls /dev/shm | grep '^link_remap\.' | grep -vxF "$REMAPS_BEFORE" | head -1 || true)
    [ -n "$REMAP" ] || fail "the dump made no /dev/shm/link_remap.ID of the thunk's semaphore"
    cp -a "/dev/shm/$REMAP" "$WORK/remap-copy"
}
put_back_link_remap() { [ -e "/dev/shm/$REMAP" ] || cp -a "$WORK/remap-copy" "/dev/shm/$REMAP"; }

# check_restored GPU: right after the restore of RPID (the workload still waits at its gate), the
# driver holds its two queues on the workload's rings on GPU (0x...) and its event signaled, and
# its userptr BO on the workload's buffer, whose bytes are the process's own memory: the dumped
# process is gone (with it the range), so they are what criu restored from its image, and they
# must be the bytes the dumped process held (USERPTR_DUMPED).
check_restored() {
    local gpu=$1 after kind ring event uaddr usize
    : "${USERPTR_DUMPED:?the scenario took no digest of the userptr bytes before the dump}"
    after=$(query "$RPID")
    read -r _ uaddr usize < <(grep '^userptr ' "$GATES/out.txt")
    grep -qx "bo USERPTR $gpu 0x[0-9a-f]* $usize process $uaddr" <<<"$after" ||
        fail "no restored userptr BO of the process's own memory at $uaddr ($usize bytes) on GPU $gpu: $after"
    [ "$(userptr_digest "$RPID")" = "$USERPTR_DUMPED" ] ||
        fail "the restored process's userptr bytes at $uaddr are not those it was dumped with"

    for kind in compute sdma; do
        ring=$(awk -v k="$kind" '$1 == "queue" && $2 == k {print $3}' "$GATES/out.txt")
        grep -qx "queue $kind $gpu $ring [0-9a-z]*" <<<"$after" ||
            fail "no restored $kind queue on ring $ring of GPU $gpu: $after"
    done
    [ "$(grep -c '^queue ' <<<"$after")" = 2 ] || fail "the restored process has other queues: $after"
    grep -qx "process running evictions 0" <<<"$after" || fail "the restored process is not running: $after"
    event=$(awk '$1 == "event" {print $2}' "$GATES/out.txt")
    grep -qx "event $event signaled" <<<"$after" || fail "event $event is not restored signaled: $after"
}

# finish_restored GPU: the restored workload goes on from its gate; each doorbell it rings lands in
# its restored queue on GPU, it checks every byte to the last step, and ends with EXPECTED's
# checksum, the driver then holding no queue or event of it. Sets GOT, COMPUTE, SDMA.
finish_restored() {
    local gpu=$1 rung
    touch "$GATES/go"
    wait_for_line "$GATES/out.txt" "^waiting for $GATES/end" 20
    read -r _ COMPUTE SDMA < <(grep '^rang ' "$GATES/out.txt")
    rung=$(query "$RPID")
    grep -qx "queue compute $gpu [0-9a-fx]* $COMPUTE" <<<"$rung" ||
        fail "the compute queue's doorbell does not hold $COMPUTE, the value rung after the restore: $rung"
    grep -qx "queue sdma $gpu [0-9a-fx]* $SDMA" <<<"$rung" ||
        fail "the SDMA queue's doorbell does not hold $SDMA, the value rung after the restore: $rung"
    touch "$GATES/end"
    wait_gone "$RPID" 20
    grep -q '^done$' "$GATES/out.txt" || fail "the restored workload failed: $(tail -3 "$GATES/out.txt")"
    GOT=$(awk '/^checksum /{print $2}' "$GATES/out.txt")
    [ "$GOT" = "$EXPECTED" ] || fail "checksum after restore $GOT, uninterrupted run $EXPECTED"
    [ -z "$("$DRIVER_DIR/kfd-driver-query" "$ROOT" "$RPID" 2>/dev/null | grep -E "^(queue|event) ")" ] ||
        fail "the driver still holds queues or events of the ended workload"
}

# dump_failed_by FAULT WANT DIR CRIU_ARGS...: a dump of WPID into DIR with FAULT (a line of
# ROOT/faults: NAME ERRNO [NTH]) failing one call of the driver fails with the plugin's error
# matching /WANT/ (after "amdgpu_plugin "), the driver took its faults file, and WPID lives on,
# traced by nobody.
dump_failed_by() {
    local fault=$1 want=$2 dir=$3
    shift 3
    echo "$fault" >"$ROOT/faults"
    criu_dump "$dir" "$WPID" "$@" 2>/dev/null && fail "the dump with $fault failing succeeded"
    grep -qE "Error \(amdgpu\): amdgpu_plugin $want" "$dir/dump.log" ||
        fail "$fault: the plugin's error does not say /$want/: $(grep -a 'Error' "$dir/dump.log" | tail -3)"
    [ ! -e "$ROOT/faults" ] || fail "$fault: the driver did not take its faults file"
    kill -0 "$WPID" 2>/dev/null || fail "$fault: the workload died with the failed dump"
    untraced "$WPID" "$fault"
}

# dumps_failed_by_faults PREFIX CRIU_ARGS...: dump_failed_by for each "FAULT|WANT" of the array
# FAULTS, into PREFIX-1, PREFIX-2..., each followed by after_failed_dump FAULT DIR (the
# scenario's own checks). Sets n to the number of dumps.
dumps_failed_by_faults() {
    local prefix=$1 entry
    shift
    n=0
    for entry in "${FAULTS[@]}"; do
        n=$((n + 1))
        dump_failed_by "${entry%%|*}" "${entry#*|}" "$prefix-$n" "$@"
        after_failed_dump "${entry%%|*}" "$prefix-$n"
    done
}

# make_content_keys: KEYS, a folder of the scenario's own (0700) holding checkpoint.key and
# checkpoint.crt, a private key and its self-signed certificate for content-encryption.
make_content_keys() {
    KEYS=$WORK/keys
    mkdir -m 0700 "$KEYS"
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=criu-amdgpu-e2e \
        -keyout "$KEYS/checkpoint.key" -out "$KEYS/checkpoint.crt" 2>/dev/null ||
        fail "openssl could not make a key and certificate"
    chmod 0600 "$KEYS"/*
}
# encrypted_dump DIR PID CRIU_ARGS...: criu_dump with content-compression zstd and
# content-encryption aes-256-gcm to KEYS's certificate (make_content_keys first).
# expect_libcrypto yes|no NAME: whether the criu run whose dynamic loader wrote its records to
# $WORK/ld-NAME.* (LD_DEBUG=files LD_DEBUG_OUTPUT=$WORK/ld-NAME) loaded OpenSSL's libcrypto; the
# plugin's core must be among what they list (the records are there and complete).
expect_libcrypto() {
    local want=$1 name=$2 records
    records=$(cat "$WORK/ld-$name".* 2>/dev/null || true)
    grep -q 'file=.*amdgpu_plugin_core\.so' <<<"$records" ||
        fail "$name: no record of the dynamic loader names the plugin's core (LD_DEBUG=files)"
    if grep -q 'file=libcrypto\.so' <<<"$records"; then
        [ "$want" = yes ] || fail "$name: criu loaded libcrypto, though nothing was encrypted, signed or verified"
    else
        [ "$want" = no ] || fail "$name: criu never loaded libcrypto, though the checkpoint is encrypted"
    fi
}
encrypted_dump() {
    CRIU_AMDGPU_CONTENT_CERTIFICATE=$KEYS/checkpoint.crt CRIU_AMDGPU_CONTENT_ENCRYPTION=aes-256-gcm \
        CRIU_AMDGPU_CONTENT_COMPRESSION=zstd criu_dump "$@"
}
# restore_refused_without_key DIR CRIU_ARGS...: a restore of the encrypted dump in DIR without the
# private key fails (not by criu's timeout), restores no process and names content-private-key.
restore_refused_without_key() {
    local dir=$1 rc=0
    shift
    timeout 60 "$CRIU" restore -D "$dir" -L "$PLUGIN_DIR" -v4 -o refused.log -d \
        --pidfile "$dir/refused.pid" "$@" 2>/dev/null || rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "a restore without the private key ended with status $rc"
    [ ! -s "$dir/refused.pid" ] || fail "a restore without the private key restored a process"
    grep -q "no content-private-key is given" "$dir/refused.log" ||
        fail "the restore without the key does not name the option: $(grep amdgpu "$dir/refused.log" | tail -3)"
}

# gpu_of_minor MINOR: the gpu_id (0x...) of the machine's GPU whose render node is renderDMINOR.
gpu_of_minor() {
    local node
    for node in "$ROOT"/sysfs/nodes/*; do
        if grep -qx "drm_render_minor $1" "$node/properties" 2>/dev/null; then
            printf '0x%x' "$(cat "$node/gpu_id")"
            return 0
        fi
    done
    fail "the machine at $ROOT has no GPU with render minor $1"
}

# untraced PID WHAT: PID is traced by nobody within 2 s (criu's and any guardian's ptrace gone).
untraced() {
    local tracer=""
    for _ in $(seq 40); do
        tracer=$(awk '/^TracerPid:/ {print $2}' "/proc/$1/status")
        [ "$tracer" = 0 ] && return 0
        sleep 0.05
    done
    fail "$2: process $1 is still traced by $tracer"
}

# device_nodes DIR [MINOR...]: DIR/kfd and DIR/dri/renderD<MINOR> (of every render node the
# machine lists, without MINOR), block nodes of the machine's memory: what a container runtime is
# given as /dev/kfd and /dev/dri/renderD<N> (the container cells). Sets MINORS.
device_nodes() {
    local dir=$1 major minor node render m
    shift
    read -r major minor < <(stat -c '%t %T' "$ROOT/memory.node")
    MINORS=("$@")
    if [ $# = 0 ]; then
        for node in "$ROOT"/sysfs/nodes/*/properties; do
            render=$(awk '$1 == "drm_render_minor" {print $2}' "$node")
            if [ -n "$render" ] && [ "$render" -gt 0 ]; then MINORS+=("$render"); fi
        done
    fi
    [ ${#MINORS[@]} -gt 0 ] || fail "the machine at $ROOT lists no render node"
    rm -f "$dir/kfd" "$dir"/dri/renderD*
    mkdir -p "$dir/dri"
    mknod -m 666 "$dir/kfd" b $((16#$major)) $((16#$minor))
    for m in "${MINORS[@]}"; do
        mknod -m 666 "$dir/dri/renderD$m" b $((16#$major)) $((16#$minor))
    done
}

# contained PID WHAT (the container cells): PID (as the host sees it) is in pid and mount
# namespaces other than this shell's: a container's process.
contained() {
    local ns
    for ns in pid mnt; do
        [ "$(readlink "/proc/$1/ns/$ns")" != "$(readlink "/proc/self/ns/$ns")" ] ||
            fail "$2 (process $1) is in this shell's $ns namespace, not a container's"
    done
}

# no_processes_left: the driver holds no KFD process (it reaps a task that exited within 200 ms).
no_processes_left() {
    local left
    for _ in $(seq 40); do
        left=$("$DRIVER_DIR/kfd-driver-query" "$ROOT" --processes) || fail "the driver did not list its processes"
        [ -z "$left" ] && return 0
        sleep 0.05
    done
    fail "the driver still holds KFD processes $(tr '\n' ' ' <<<"$left")"
}

# The machine of lib.sh's restore_refused: the driver, which a refused restore must leave with no
# KFD process (so no BO, queue or event of one). Nothing is reset before a restore: nothing of an
# earlier one is left, as each is checked after it.
refused_restore_reset() { no_processes_left; }
refused_restore_left() { no_processes_left; }

