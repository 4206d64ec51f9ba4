# Containers through podman (Debian bookworm's 4.3.1, rootful, with bookworm's runc): `podman
# container checkpoint --export` and `podman container restore --import`, podman driving runc
# driving the criu under test. Sourced first by scenario_podman*.sh (it sources lib.sh and
# runc_lib.sh itself).
#
# podman changes nothing on the machine: its storage (vfs), run root, runc's state, its locks
# (file locks, not /dev/shm), events and temporary files are all in the work dir, through
# CONTAINERS_CONF / CONTAINERS_STORAGE_CONF files written there and podman's global options; its
# cgroups are under a parent of this run's own, removed at the end. The scenario runs in a mount
# namespace of its own where /var/lib is a private overlay: `podman import` writes its blob-info
# cache to /var/lib/containers/cache whatever the configuration says (4.3 has no setting for it),
# and the scenario checks that nothing else reached that overlay. criu is the criu under test:
# runc runs `criu` from PATH, and podman's PATH starts with a directory whose `criu` runs $CRIU.
#
# The container is built as runc_lib.sh builds it: an image imported from a tarball of an empty
# root with the links /bin, /lib... into /usr, the host's /usr, the build tree and the mock
# machine bind-mounted at their own paths (the plugin in criu and the workload in the container
# name the same files), the mock device numbers allowed in the devices cgroup, CAP_MKNOD and the
# host's network (criu would lock a network namespace with iptables). The mounts podman makes (the
# container's /dev/shm tmpfs in its userdata folder) stay in the scenario's mount namespace. A
# scenario may give the container GPUs the podman way instead of the whole machine, as AMD's device
# plugin does: GPU_DEVICES (`--device` of ROOT/dev/kfd and some ROOT/dev/dri/renderD<minor>) and
# WORKLOAD_VIEW (the workload's `--dev-dir /dev`: it uses only the GPUs it sees there).
if [ "${E2E_PODMAN_NS:-0}" != 1 ]; then
    E2E_PODMAN_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/runc_lib.sh"
command -v podman >/dev/null || fail "podman is not installed (scripts/install-deps.sh installs it)"
[ -x /usr/sbin/runc ] || fail "/usr/sbin/runc is missing (scripts/install-deps.sh installs runc)"

PODMAN_DIR=$WORK/podman
PODMAN_CGROUP=criu-amdgpu-e2e-podman-$$
PODMAN_IMAGE=localhost/criu-amdgpu-e2e-hostusr:1
PRIVATE_OVERLAYS=()
GPU_DEVICES=()
RUN_OPTIONS=()
WORKLOAD_VIEW=()

# private_overlay DIR: DIR becomes an overlay whose changes go to the work dir (this mount
# namespace only).
private_overlay() {
    local dir=$1 name
    name=$(tr / _ <<<"$dir")
    mkdir -p "$WORK/overlay$name/upper" "$WORK/overlay$name/work"
    mount -t overlay overlay \
        -o "lowerdir=$dir,upperdir=$WORK/overlay$name/upper,workdir=$WORK/overlay$name/work" "$dir" ||
        fail "cannot lay a private overlay over $dir"
    PRIVATE_OVERLAYS+=("$dir")
}

# pm ARGS...: podman with this run's private configuration and criu.
pm() {
    PATH="$PODMAN_DIR/bin:$PATH" TMPDIR="$PODMAN_DIR/tmp" \
        CONTAINERS_CONF="$PODMAN_DIR/containers.conf" \
        CONTAINERS_STORAGE_CONF="$PODMAN_DIR/storage.conf" \
        CONTAINERS_REGISTRIES_CONF="$PODMAN_DIR/registries.conf" \
        podman --root "$PODMAN_DIR/root" --runroot "$PODMAN_DIR/run" --cgroup-manager cgroupfs \
        --runtime runc --runtime-flag "root=$PODMAN_DIR/runc" "$@"
}

# The containers, their cgroups and the overlays go in the EXIT trap, before lib.sh's cleanup.
podman_cleanup() {
    local d i left
    if [ -d "$PODMAN_DIR/root" ]; then pm rm -a -f -t 0 >/dev/null 2>&1 || true; fi
    # conmon (in a cgroup of its own under the parent) may still be exiting: a few tries.
    for _ in $(seq 50); do
        left=0
        for d in /sys/fs/cgroup/*/"$PODMAN_CGROUP"; do
            [ -d "$d" ] || continue
            find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
            [ ! -d "$d" ] || left=1
        done
        [ "$left" = 0 ] && break
        sleep 0.1
    done
    [ "$left" = 0 ] || echo "warning: cgroups /sys/fs/cgroup/*/$PODMAN_CGROUP are still busy" >&2
    for ((i = ${#PRIVATE_OVERLAYS[@]} - 1; i >= 0; i--)); do
        umount "${PRIVATE_OVERLAYS[$i]}" 2>/dev/null || true
    done
}
trap 'podman_cleanup; cleanup' EXIT
private_overlay /var/lib

# podman_setup: the private configuration, the criu wrapper and the image.
podman_setup() {
    local p=$PODMAN_DIR rootfs=$PODMAN_DIR/rootfs link
    mkdir -p "$p"/{bin,tmp,run,root,runc,networks,volumes} "$rootfs"/{usr,proc,dev,sys,out}
    cat >"$p/containers.conf" <<EOF
# podman's whole configuration for this run (CONTAINERS_CONF replaces the system's files)
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
netns = "host"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$p/events.log"
lock_type = "file"
tmp_dir = "$p/tmp"
image_copy_tmp_dir = "$p/tmp"
volume_path = "$p/volumes"
static_dir = "$p/root/libpod"
runtime = "runc"
[engine.runtimes]
runc = ["/usr/sbin/runc"]
[network]
network_config_dir = "$p/networks"
EOF
    cat >"$p/storage.conf" <<EOF
[storage]
driver = "vfs"
runroot = "$p/run"
graphroot = "$p/root"
EOF
    : >"$p/registries.conf"
    printf '#!/bin/sh\n# the criu under test, for runc under podman\nexec %q "$@"\n' "$CRIU" >"$p/bin/criu"
    chmod +x "$p/bin/criu"
    for link in bin lib lib32 lib64 libx32 sbin; do
        if [ -L "/$link" ]; then ln -sfn "$(readlink "/$link")" "$rootfs/$link"; fi
    done
    tar -C "$rootfs" -cf "$p/rootfs.tar" . || fail "cannot pack the container's root"
    pm import "$p/rootfs.tar" "$PODMAN_IMAGE" >"$WORK/podman-import.log" 2>&1 ||
        fail "podman import failed: $(cat "$WORK/podman-import.log")"
}

# podman_run NAME ROOT OUT STDOUT ANNOTATION PROGRAM ARGS...: starts container NAME running
# PROGRAM ARGS on the mock machine ROOT, with the host's folder OUT as /out and its output to
# STDOUT (a path in the container); ANNOTATION is the org.criu.config file ("-": none, runc then
# has criu read /etc/criu/runc.conf). The array GPU_DEVICES adds `podman run` options (--device);
# for a machine other than the mock's (no ROOT/machine.conf), DEVICE_RULE replaces the mock
# device's rule of the devices cgroup and the array RUN_OPTIONS adds options (mounts).
podman_run() {
    local name=$1 root=$2 out=$3 stdout=$4 annotation=$5; shift 5
    local major minor rule=${DEVICE_RULE:-} opts=()
    if [ -z "$rule" ]; then
        major=$(awk '$1 == "device_major" {print $2}' "$root/machine.conf")
        minor=$(awk '$1 == "device_minor" {print $2}' "$root/machine.conf")
        rule="c $major:$minor rwm"
    fi
    [ "$annotation" = - ] || opts+=(--annotation "org.criu.config=$annotation")
    mkdir -p "$out"
    pm run -d --name "$name" --network host --cgroup-parent "/$PODMAN_CGROUP" \
        --cap-add MKNOD --device-cgroup-rule "$rule" \
        -v /usr:/usr:ro -v "$BUILD_DIR:$BUILD_DIR:ro" -v "$root:$root:rw,dev" -v "$out:/out:rw" \
        "${opts[@]}" "${GPU_DEVICES[@]}" "${RUN_OPTIONS[@]}" "$PODMAN_IMAGE" \
        /bin/sh -c 'out=$1; shift; exec "$@" </dev/null >"$out" 2>&1' sh "$stdout" "$@" \
        >"$WORK/podman-run.log" 2>&1 || fail "podman run failed: $(cat "$WORK/podman-run.log")"
}

# podman_state NAME: the container's state (running, exited...).
podman_state() { pm inspect --format '{{.State.Status}}' "$1"; }
# podman_pid NAME: the pid of container NAME's process, as the host sees it.
podman_pid() { pm inspect --format '{{.State.Pid}}' "$1"; }

# podman_wait NAME SECONDS: waits for container NAME to end; its process must exit with 0.
podman_wait() {
    local name=$1 secs=$2 code state
    for _ in $(seq $((secs * 5))); do
        state=$(podman_state "$name")
        # Between its process's end and conmon's report the container is "stopped".
        [ "$state" = exited ] && break
        sleep 0.2
    done
    [ "$state" = exited ] || fail "container $name did not end within $secs s (it is $state)"
    code=$(pm inspect --format '{{.State.ExitCode}}' "$name")
    [ "$code" = 0 ] || fail "container $name ended with exit code $code"
}

# podman_criu_log NAME LOG: where criu's log LOG (dump.log, restore.log) of container NAME is
# (its userdata folder, kept by --keep).
podman_criu_log() { echo "$(pm inspect --format '{{.StaticDir}}' "$1")/$2"; }

# check_criu_log LOG CONF: our criu wrote LOG, with the plugin under test loaded, after reading
# the configuration file CONF. A copy stays in the work dir (the container's goes with it), where
# fail shows it.
check_criu_log() {
    local log=$1 conf=$2 copy
    [ -f "$log" ] || fail "no criu log $log"
    copy="$WORK/criu-$(basename "$(dirname "$(dirname "$log")")" | cut -c1-12)"
    mkdir -p "$copy" && cp "$log" "$copy/"
    grep -q "Version: $CRIU_VERSION" "$log" || fail "$log is not the log of criu $CRIU_VERSION"
    check_abi "$log"
    check_backend_origin "$log"
    require_core "$log"
    # runc names the file ("Would overwrite RPC settings with values from FILE", present or not);
    # criu says it parsed it only when it was there.
    grep -qF "values from $conf" "$log" || fail "runc did not name $conf to criu ($log)"
    grep -qxE "\([0-9.]+\) Parsing config file $conf" "$log" ||
        fail "criu did not read the configuration file $conf ($log)"
}

# podman_checkpoint NAME EXPORT CONF [OPTIONS...]: podman container checkpoint --export; criu's
# log (DUMP_LOG) must show it read CONF.
podman_checkpoint() {
    local name=$1 export=$2 conf=$3; shift 3
    pm container checkpoint --keep --export "$export" "$@" "$name" >"$WORK/podman-checkpoint.log" 2>&1 ||
        fail "podman container checkpoint failed: $(cat "$WORK/podman-checkpoint.log")"
    DUMP_LOG=$(podman_criu_log "$name" dump.log)
    check_criu_log "$DUMP_LOG" "$conf"
    local listing
    listing=$(tar -tf "$export") || fail "cannot list the export $export"
    grep -q '^checkpoint/amdgpu-renderD-' <<<"$listing" || fail "no render-node image in the export $export"
}

# podman_restore EXPORT NAME CONF: podman container restore --import as container NAME; criu's
# log (RESTORE_LOG) must show it read CONF, and the container must be running.
podman_restore() {
    local export=$1 name=$2 conf=$3
    pm container restore --keep --import "$export" --name "$name" >"$WORK/podman-restore.log" 2>&1 ||
        fail "podman container restore failed: $(cat "$WORK/podman-restore.log")"
    RESTORE_LOG=$(podman_criu_log "$name" restore.log)
    check_criu_log "$RESTORE_LOG" "$conf"
    local state
    state=$(podman_state "$name")
    [ "$state" = running ] || fail "the restored container $name is not running (it is $state)"
}

# wait_for_submissions ROOT N [SECONDS]: some queue of the mock machine ROOT has taken N
# submissions (the workload submits one per buffer and step).
wait_for_submissions() {
    local root=$1 n=$2 secs=${3:-60}
    for _ in $(seq $((secs * 10))); do
        "$TOOL" mock status --root "$root" 2>/dev/null |
            awk -v n="$n" '$1 == "queue" && $4 >= n {found = 1} END {exit !found}' && return 0
        sleep 0.1
    done
    fail "no queue of $root took $n submissions within $secs s"
}

# gpu_of_render_node ROOT MINOR: the gpu_id of the mock machine ROOT's GPU with render minor MINOR.
gpu_of_render_node() {
    "$TOOL" mock status --root "$1" | awk -v node="renderD$2" '$1 == "GPU" && $5 == node {print $2}'
}

# check_remapped LOG ROOT SRC: the restore log LOG maps the checkpoint's GPU SRC onto another
# gpu_id, and the machine ROOT holds a context of the restored process on that GPU (seen by the
# process as SRC). Sets MOVED_TO (that gpu_id).
check_remapped() {
    local log=$1 root=$2 src=$3 status
    MOVED_TO=$(grep -oE "GPU $src -> 0x[0-9a-f]+" "$log" | head -1 | awk '{print $4}')
    [ -n "$MOVED_TO" ] && [ "$MOVED_TO" != "$src" ] || fail "no remapping of GPU $src in $log"
    status=$("$TOOL" mock status --root "$root")
    grep -qE "^context [0-9]+  GPU $MOVED_TO \(seen as $src\)" <<<"$status" ||
        fail "the restored container has no context on GPU $MOVED_TO (seen as $src): $status"
}

# check_system_untouched: podman left nothing of its own on the machine: nothing but the blob
# cache reached /var/lib, and none of its default run/state places exist unless they did before.
check_system_untouched() {
    local extra
    extra=$(cd "$WORK/overlay_var_lib/upper" && find . -mindepth 1 | grep -vE '^\./containers(/cache(/blob-info-cache-v1\.boltdb)?)?$' || true)
    [ -z "$extra" ] || fail "podman wrote to /var/lib beyond its blob cache: $extra"
    # podman 4.3 cleans up after a failed restore with `runc delete --force ID` without the
    # --runtime-flag root it was given, and runc makes its default root, /run/runc, to look there:
    # empty, it is podman's doing, not the scenario's, and goes again.
    if ! grep -qx /run/runc <<<"$PODMAN_PREEXISTING" && [ -d /run/runc ] &&
        [ -z "$(ls -A /run/runc)" ]; then
        rmdir /run/runc
    fi
    [ "$(existing_podman_places)" = "$PODMAN_PREEXISTING" ] ||
        fail "podman created on the machine: $(comm -13 <(echo "$PODMAN_PREEXISTING") <(existing_podman_places))"
}
# existing_podman_places: those of podman's and runc's default places that exist.
existing_podman_places() {
    local p
    for p in /run/libpod /run/containers /run/runc /dev/shm/libpod_lock /etc/containers/networks \
        /sys/fs/cgroup/devices/libpod_parent /sys/fs/cgroup/devices/machine.slice; do
        if [ -e "$p" ]; then echo "$p"; fi
    done
}
PODMAN_PREEXISTING=$(existing_podman_places)

# podman_prepare CONF OPTIONS_FILE GPUS SIZE [MACHINE_OPTIONS...]: a mock machine ROOT
# (`topology generate` MACHINE_OPTIONS, default two GPUs), criu's configuration CONF for it
# (OPTIONS_FILE: the plugin's own options file for a criu without --plugin-option, "" for the
# environment), podman set up, and the workload's ARGS (GPUS GPUs, 3 buffers of SIZE bytes each).
# The workload runs with STOPPABLE: it steps until the scenario touches STOP_FILE (the host's path
# of the container's /out/stop; lib.sh finish_stopped), which then compares its checksum with an
# uninterrupted run of as many steps. A fixed number of steps ran out under load: the restored
# container had ended before podman's restore returned ("the restored container gpu-job-moved is
# not running", 4 times in 25 runs beside other tests).
podman_prepare() {
    local conf=$1 options=$2 gpus=$3 size=$4; shift 4
    [ $# -gt 0 ] || set -- --gpus 2
    ROOT=$(make_machine machine "$@")
    write_criu_conf "$conf" "$ROOT" "$options"
    podman_setup
    ARGS=(--gpus "$gpus" --buffers 3 --size "$size")
}
STOPPABLE=(--steps 100000 --stop-file /out/stop)
STOP_FILE=$WORK/out/stop

# podman_finish_stopped NAME OUT: ends the workload of container NAME, run with STOPPABLE and its
# output to podman's log (podman_run's STDOUT /dev/stdout), keeps that log as OUT, and sets GOT
# and EXPECTED (lib.sh stopped_checksums).
podman_finish_stopped() {
    local name=$1 out=$2
    touch "$STOP_FILE"
    podman_wait "$name" 120
    pm logs "$name" >"$out" 2>&1 || fail "podman logs $name failed: $(cat "$out")"
    stopped_checksums "$ROOT" "$out" "${ARGS[@]}"
}

# podman_move ANNOTATION CONF SRC GPU_ID_BASE RENDER_MINOR_BASE: the busy workload (no pause
# between its steps; the array WORKLOAD_VIEW adds its options in the container) in container
# gpu-job, annotation ANNOTATION ("-": none), is checkpointed with --export mid-computation, the
# container removed, the machine replaced (four GPUs from GPU_ID_BASE and RENDER_MINOR_BASE), and
# the export restored with --import as gpu-job-moved; the checkpoint's GPU SRC must be remapped
# (MOVED_TO: onto which), and the workload, stopped then, finish with the checksum of an
# uninterrupted run of as many steps (EXPECTED). criu must have read CONF at both ends. A function
# before_move, if the scenario has one, runs before the replacement.
podman_move() {
    local annotation=$1 conf=$2 src=$3
    podman_run gpu-job "$ROOT" "$WORK/out" /out/out.txt "$annotation" "$WORKLOAD" --root "$ROOT" \
        "${ARGS[@]}" "${WORKLOAD_VIEW[@]}" --step-ms 0 "${STOPPABLE[@]}"
    wait_for_line "$WORK/out/out.txt" ": step 50/"
    "$TOOL" mock status --root "$ROOT" | grep -qE "^context [0-9]+  GPU $src " ||
        fail "the workload in the container does not use GPU $src: $("$TOOL" mock status --root "$ROOT")"
    podman_checkpoint gpu-job "$WORK/gpu-job.tar.gz" "$conf"
    [ "$(podman_state gpu-job)" = exited ] ||
        fail "the checkpointed container is $(podman_state gpu-job), not exited"
    pm rm -f gpu-job >/dev/null
    if declare -F before_move >/dev/null; then before_move; fi
    replace_machine "$ROOT" "$4" "$5"
    podman_restore "$WORK/gpu-job.tar.gz" gpu-job-moved "$conf"
    check_remapped "$RESTORE_LOG" "$ROOT" "$src"
    finish_stopped "$ROOT" "$WORK/out/out.txt" "${ARGS[@]}"
    [ "$GOT" = "$EXPECTED" ] || fail "checksum after podman restore --import $GOT, uninterrupted run $EXPECTED"
}
