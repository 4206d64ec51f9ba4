# Containers through runc, as Kubernetes checkpoints them (kubelet -> CRI-O or containerd -> runc ->
# criu): Debian bookworm's runc drives the criu under test (runc's global --criu) over criu's RPC
# (`criu swrk`). Sourced by scenario_runc*.sh after lib.sh.
#
# The container's root filesystem is built from the host without a network: an empty read-only
# root with the host's /usr bind-mounted read-only (/bin, /lib... are links into it, as on Debian),
# the build tree read-only and the mock GPU's root read-write, both at their own paths (the plugin
# in criu and the workload in the container name the same files), and /out for the workload's
# output. The devices cgroup lets the container use the mock device numbers; CAP_MKNOD lets the
# workload make its device nodes. No network namespace: criu would lock it with iptables.
#
# Plugin options reach criu the way runc users pass them: in criu's configuration file that runc
# names in its RPC request (/etc/criu/runc.conf, or the file of the OCI annotation
# org.criu.config). criu finds the plugin through that file's `libdir`. A criu that has no
# --plugin-option (before 4.3) refuses it in a configuration file; for those the mock root is in
# the plugin's own options file (/etc/criu/amdgpu.conf) or in the environment, which runc passes
# on to criu.

command -v runc >/dev/null || fail "runc is not installed (scripts/install-deps.sh installs it)"
RUNC_STATE=$WORK/runc-state
CONTAINER=criu-amdgpu-e2e-$$
# The container goes in the EXIT trap, before lib.sh's cleanup removes the work dir.
remove_container() {
    runc --root "$RUNC_STATE" kill "$CONTAINER" KILL >/dev/null 2>&1 || true
    runc --root "$RUNC_STATE" delete -f "$CONTAINER" >/dev/null 2>&1 || true
}
trap 'remove_container; cleanup' EXIT

# write_criu_conf FILE ROOT [OPTIONS_FILE]: criu's configuration for runc: where the plugin is, and
# the plugin's mock root: a plugin option in FILE where criu has them; otherwise a line of the
# plugin's own options file OPTIONS_FILE (as /etc/criu/amdgpu.conf on a node), or, without one,
# the environment (runc passes its environment on to criu).
write_criu_conf() {
    local file=$1 root=$2 options=${3:-}
    mkdir -p "$(dirname "$file")"
    {
        echo "# criu options for runc's checkpoints and restores (criu-amdgpu e2e)"
        [ "${E2E_INSTALLED:-0}" = 1 ] || echo "libdir $PLUGIN_DIR"
        if criu_has_plugin_option; then echo "plugin-option amdgpu.mock-root=$root"; fi
    } >"$file"
    unset CRIU_AMDGPU_MOCK_ROOT
    if criu_has_plugin_option; then
        return
    elif [ -n "$options" ]; then
        mkdir -p "$(dirname "$options")"
        echo "plugin-opt amdgpu:mock-root=$root" >"$options"
        note "criu $CRIU_VERSION has no --plugin-option: the mock root is in $options"
    else
        export CRIU_AMDGPU_MOCK_ROOT=$root
        note "criu $CRIU_VERSION has no --plugin-option: the mock root goes through the environment"
    fi
}

# make_bundle BUNDLE ROOT OUT CONF PROGRAM ARGS...: an OCI bundle running PROGRAM ARGS (output to
# OUT/out.txt) with the mock machine ROOT. CONF names the org.criu.config annotation's file; "-"
# leaves the annotation out (runc then has criu read /etc/criu/runc.conf). For a machine other
# than the mock's, BUNDLE_DEVICES replaces the mock device's rule of the devices cgroup and
# BUNDLE_MOUNTS adds mounts (both JSON objects, separated by commas).
make_bundle() {
    local bundle=$1 root=$2 out=$3 conf=$4; shift 4
    local rootfs=$bundle/rootfs link args="" a major minor annotations="" devices
    mkdir -p "$rootfs"/{usr,proc,dev,sys,out} "$rootfs$BUILD_DIR" "$rootfs$root" "$out"
    for link in bin lib lib32 lib64 libx32 sbin; do
        if [ -L "/$link" ]; then ln -sfn "$(readlink "/$link")" "$rootfs/$link"; fi
    done
    for a in /bin/sh -c 'exec "$0" "$@" </dev/null >/out/out.txt 2>&1' "$@"; do
        args+="${args:+, }$(json_string "$a")"
    done
    devices=${BUNDLE_DEVICES:-}
    if [ -z "$devices" ]; then
        major=$(awk '$1 == "device_major" {print $2}' "$root/machine.conf")
        minor=$(awk '$1 == "device_minor" {print $2}' "$root/machine.conf")
        devices="{\"allow\": true, \"type\": \"c\", \"major\": $major, \"minor\": $minor, \"access\": \"rwm\"}"
    fi
    [ "$conf" = - ] || annotations="\"annotations\": {\"org.criu.config\": $(json_string "$conf")},"
    cat >"$bundle/config.json" <<EOF
{
  "ociVersion": "1.0.2-dev",
  $annotations
  "process": {
    "terminal": false,
    "user": {"uid": 0, "gid": 0},
    "args": [$args],
    "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],
    "cwd": "/",
    "capabilities": {
      "bounding": ["CAP_MKNOD"], "effective": ["CAP_MKNOD"], "permitted": ["CAP_MKNOD"]
    },
    "noNewPrivileges": true
  },
  "root": {"path": "rootfs", "readonly": true},
  "hostname": "mockgpu",
  "mounts": [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
     "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs",
     "options": ["nosuid", "noexec", "nodev", "ro"]},
    {"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro"]},
    {"destination": $(json_string "$BUILD_DIR"), "type": "bind", "source": $(json_string "$BUILD_DIR"),
     "options": ["rbind", "ro"]},
    {"destination": $(json_string "$root"), "type": "bind", "source": $(json_string "$root"),
     "options": ["rbind", "rw"]},
    {"destination": "/out", "type": "bind", "source": $(json_string "$out"),
     "options": ["rbind", "rw"]}${BUNDLE_MOUNTS:+,
    $BUNDLE_MOUNTS}
  ],
  "linux": {
    "resources": {
      "devices": [
        {"allow": false, "access": "rwm"},
        $devices
      ]
    },
    "namespaces": [{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}]
  }
}
EOF
}

# container_pid: the pid of the container's process, as the host sees it (from `runc state`).
container_pid() {
    runc --root "$RUNC_STATE" state "$CONTAINER" | awk -F'[:,]' '/"pid"/ {gsub(/ /, "", $2); print $2}'
}

# runc_run BUNDLE: starts the container detached; sets WPID to its process (as the host sees it).
runc_run() {
    (cd "$1" && runc --root "$RUNC_STATE" run -d "$CONTAINER" </dev/null >"$WORK/runc-run.log" 2>&1) ||
        fail "runc run failed: $(cat "$WORK/runc-run.log")"
    WPID=$(container_pid)
    [ -n "$WPID" ] || fail "no pid for container $CONTAINER"
}

# runc_checkpoint IMG WORKDIR: runc checkpoint through the criu under test; criu's log is
# WORKDIR/dump.log. Checks the plugin's ABI and where its backends came from.
runc_checkpoint() {
    local img=$1 wd=$2
    runc --root "$RUNC_STATE" --criu "$CRIU" checkpoint --image-path "$img" --work-path "$wd" \
        "$CONTAINER" >"$WORK/runc-checkpoint.log" 2>&1 ||
        fail "runc checkpoint failed: $(cat "$WORK/runc-checkpoint.log") (see $wd/dump.log)"
    check_abi "$wd/dump.log"
    check_backend_origin "$wd/dump.log"
    require_core "$wd/dump.log"
}

# runc_restore BUNDLE IMG WORKDIR: runc restore (detached) through the criu under test; criu's
# log is WORKDIR/restore.log. Sets RPID.
runc_restore() {
    local bundle=$1 img=$2 wd=$3
    (cd "$bundle" && runc --root "$RUNC_STATE" --criu "$CRIU" restore -d --image-path "$img" \
        --work-path "$wd" "$CONTAINER" </dev/null >"$WORK/runc-restore.log" 2>&1) ||
        fail "runc restore failed: $(cat "$WORK/runc-restore.log") (see $wd/restore.log)"
    check_abi "$wd/restore.log"
    check_backend_origin "$wd/restore.log"
    RPID=$(container_pid)
    [ -n "$RPID" ] || fail "no pid for the restored container $CONTAINER"
}

# runc_round ROOT CONF ANNOTATION BETWEEN: the workload on the mock machine ROOT, in a container
# whose org.criu.config annotation is ANNOTATION ("-" for none), is checkpointed mid-computation
# with runc (busy, no pause between its steps: most moments are inside a driver call); the
# function BETWEEN then changes the machine (reset, replacement) and runc restores the container;
# the workload must finish with the checksum of an uninterrupted run. CONF is the configuration
# file criu must have read (its log says so).
runc_round() {
    local root=$1 conf=$2 annotation=$3 between=$4
    local args=(--gpus 2 --buffers 3 --size 65536 --steps 500)
    local expected got
    expected=$(reference_checksum "$root" "${args[@]}")
    make_bundle "$WORK/bundle" "$root" "$WORK/out" "$annotation" \
        "$WORKLOAD" --root "$root" "${args[@]}" --step-ms 0
    runc_run "$WORK/bundle"
    wait_for_line "$WORK/out/out.txt" ": step 50/"
    runc_checkpoint "$WORK/img" "$WORK/dump-wd"
    grep -qF "values from $conf" "$WORK/dump-wd/dump.log" ||
        fail "criu did not read the configuration file $conf (see $WORK/dump-wd/dump.log)"
    ls "$WORK/img" | grep -q '^amdgpu-renderD-' || fail "no render-node image in the checkpoint"
    if grep -q "was inside [0-9]* driver call" "$WORK/dump-wd/dump.log"; then
        note "the checkpoint caught the busy workload inside a driver call (and waited for it)"
    else
        note "the checkpoint caught the busy workload between driver calls"
    fi
    wait_gone "$WPID" 10
    "$between"
    runc_restore "$WORK/bundle" "$WORK/img" "$WORK/restore-wd"
    grep -qF "values from $conf" "$WORK/restore-wd/restore.log" ||
        fail "criu did not read the configuration file $conf at restore"
    wait_for_line "$WORK/out/out.txt" "^checksum " 120
    got=$(checksum_of "$WORK/out/out.txt")
    [ "$got" = "$expected" ] || fail "checksum after runc restore $got, uninterrupted run $expected"
    ROUND_CHECKSUM=$got
}
