# Kubernetes nodes for the k8s_* scenarios, sourced after lib.sh: containerd's CRI driven the way
# kubelet drives it (cri/cri_client.py: kubelet, cri-o and crictl are not in Debian), runc as the
# runtime and the criu under test as runc's criu, and a registry on 127.0.0.1 serving the images.
# containerd (2.1, Debian sid's) and the registry (bookworm's docker-registry) come from
# scripts/get-containerd.sh, found in CONTAINERD_DIR (CTest passes CRIU_AMDGPU_CONTAINERD_DIR's
# value); runc is the system's (scripts/install-deps.sh), as are python3-grpcio and protoc.
#
# Every node is a private containerd: its own root, state, socket and configuration under the work
# dir, host network (no CNI), `restrict_oom_score_adj` (this machine has no CAP_SYS_RESOURCE), a
# pinned sandbox image whose one process (e2e-pause) never forks, runc with its own state root.
# containerd starts with a directory holding a `criu` wrapper first in PATH: runc runs `criu` from
# PATH, and the wrapper runs $CRIU. criu's options reach it in the file named by the container's
# annotation org.criu.config, which the node lets through to the OCI spec
# (`container_annotations`); the annotation travels inside the checkpoint to the restored
# container. The images are built here from nothing (no network): the sandbox image holds
# e2e-pause only; the container's base image holds the links of a Debian root (/bin -> usr/bin...)
# and the pod mounts the host's /usr, the build tree and the mock GPU's root at their own paths.

CONTAINERD_DIR=${CONTAINERD_DIR:-/opt/criu-amdgpu/containerd}
CONTAINERD_BIN=$CONTAINERD_DIR/root/usr/bin
PYTHON=/usr/bin/python3 # Debian's, with python3-grpcio (not a python3 earlier in PATH)
CRI_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/cri" && pwd)
for b in containerd containerd-shim-runc-v2 docker-registry; do
    [ -x "$CONTAINERD_BIN/$b" ] ||
        fail "no $CONTAINERD_BIN/$b: scripts/get-containerd.sh obtains containerd and the registry"
done
command -v runc >/dev/null || fail "runc is not installed (scripts/install-deps.sh installs it)"
command -v protoc >/dev/null || fail "protoc is not installed (scripts/install-deps.sh: protobuf-compiler)"
"$PYTHON" -c 'import grpc' 2>/dev/null ||
    fail "$PYTHON cannot import grpc (scripts/install-deps.sh installs python3-grpcio)"
[ -x "$BUILD_DIR/tests/e2e/e2e-pause" ] || fail "no $BUILD_DIR/tests/e2e/e2e-pause (build the tests)"

K8S_CGROUP=criu-amdgpu-e2e-$$
# containerd makes /run/containerd/s for its shims' sockets; removed again if it was not there.
K8S_RUN_DIR_NEW=0
[ -e /run/containerd ] || K8S_RUN_DIR_NEW=1
K8S_PODS=()      # "SOCKET POD_ID" of every pod started
K8S_DAEMONS=()   # containerd and registry pids

# k8s_cleanup: the pods, the daemons, their mounts and cgroups (before lib.sh removes the work dir).
k8s_cleanup() {
    local p sock pod m
    for p in "${K8S_PODS[@]}"; do
        read -r sock pod <<<"$p"
        [ -S "$sock" ] || continue
        cri_at "$sock" stop-pod "$pod" >/dev/null 2>&1 || true
        cri_at "$sock" remove-pod "$pod" >/dev/null 2>&1 || true
    done
    for p in "${K8S_DAEMONS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${K8S_DAEMONS[@]}"; do
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
        kill -9 "$p" 2>/dev/null || true
    done
    # What a node that stopped answering leaves behind: its shims (found by their socket address,
    # which holds this work dir) and the pods' processes (found by their cgroup, this run's own).
    for p in $(pgrep -f -- "-address $WORK/" || true); do kill -9 "$p" 2>/dev/null || true; done
    for p in $(find /sys/fs/cgroup/pids/"$K8S_CGROUP" -name cgroup.procs -exec cat {} + 2>/dev/null); do
        kill -9 "$p" 2>/dev/null || true
    done
    sleep 0.2
    # Deepest first: containerd's snapshots and the pods' shm and rootfs mounts.
    while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(
        awk -v w="$WORK/" 'index($2, w) == 1 {print $2}' /proc/self/mounts | sort -r)
    find /sys/fs/cgroup/*/"$K8S_CGROUP" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ "$K8S_RUN_DIR_NEW" = 0 ] || rmdir /run/containerd/s /run/containerd 2>/dev/null || true
}
trap 'k8s_cleanup; cleanup' EXIT

mkdir -p "$WORK/cri-py"
protoc -I "$CRI_DIR" --python_out="$WORK/cri-py" "$CRI_DIR/cri.proto" ||
    fail "protoc could not compile $CRI_DIR/cri.proto"

# cri_at SOCKET COMMAND ARGS...: one CRI call (cri/cri_client.py says which).
cri_at() { CRI_PY="$WORK/cri-py" "$PYTHON" "$CRI_DIR/cri_client.py" "$@"; }
# cri COMMAND ARGS...: one CRI call to the current node (NODE_SOCK).
cri() { cri_at "$NODE_SOCK" "$@"; }

# free_port: a TCP port nobody listens on now.
free_port() {
    "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_registry: docker-registry on 127.0.0.1 with its storage in the work dir; sets REGISTRY.
start_registry() {
    local dir=$WORK/registry port
    port=$(free_port)
    mkdir -p "$dir/storage"
    cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $dir/storage
http:
  addr: 127.0.0.1:$port
  secret: criu-amdgpu-e2e
EOF
    "$CONTAINERD_BIN/docker-registry" serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
    K8S_DAEMONS+=($!)
    REGISTRY=127.0.0.1:$port
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.05
    done
    fail "the registry did not listen on $REGISTRY: $(tail -3 "$dir/registry.log")"
}

# push_images: the sandbox image ($REGISTRY/e2e/pause:1, e2e-pause as its entry point) and the
# container's base image ($REGISTRY/e2e/base:1) built from nothing and pushed to the registry.
push_images() {
    local dir=$WORK/images link
    mkdir -p "$dir/pause" "$dir/base"/{usr,proc,dev,sys,tmp,etc,out}
    cp "$BUILD_DIR/tests/e2e/e2e-pause" "$dir/pause/pause"
    for link in bin lib lib32 lib64 libx32 sbin; do
        if [ -L "/$link" ]; then ln -sfn "$(readlink "/$link")" "$dir/base/$link"; fi
    done
    tar -C "$dir/pause" -cf "$dir/pause.tar" . && tar -C "$dir/base" -cf "$dir/base.tar" . ||
        fail "cannot make the image layers in $dir"
    "$PYTHON" "$CRI_DIR/oci_image.py" image "$REGISTRY" e2e/pause:1 "$dir/pause.tar" /pause >/dev/null &&
        "$PYTHON" "$CRI_DIR/oci_image.py" image "$REGISTRY" e2e/base:1 "$dir/base.tar" /bin/sh \
            >/dev/null || fail "cannot push the images to $REGISTRY"
    SANDBOX_IMAGE=$REGISTRY/e2e/pause:1 BASE_IMAGE=$REGISTRY/e2e/base:1
}

# start_node NAME: a containerd node (its files in $WORK/NAME) using the registry; sets NODE_DIR
# and NODE_SOCK. Its criu is $CRIU, through the wrapper first in its PATH.
start_node() {
    local dir=$WORK/$1
    NODE_DIR=$dir NODE_SOCK=$dir/containerd.sock
    mkdir -p "$dir/criu-bin" "$dir/certs.d/$REGISTRY" "$dir/cni/bin" "$dir/cni/conf" "$dir/logs"
    printf '#!/bin/sh\nexec %s "$@"\n' "$(printf %q "$CRIU")" >"$dir/criu-bin/criu"
    chmod +x "$dir/criu-bin/criu"
    cat >"$dir/certs.d/$REGISTRY/hosts.toml" <<EOF
server = "http://$REGISTRY"
[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF
    cat >"$dir/config.toml" <<EOF
version = 3
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp",
                    "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$dir/containerd.sock"
[ttrpc]
  address = "$dir/containerd.sock.ttrpc"
[debug]
  address = "$dir/debug.sock"
  level = "info"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$SANDBOX_IMAGE"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$dir/certs.d"
[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["$dir/cni/bin"]
    conf_dir = "$dir/cni/conf"
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      container_annotations = ["org.criu.config"]
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "$dir/runc"
        SystemdCgroup = false
EOF
    PATH="$dir/criu-bin:$PATH" "$CONTAINERD_BIN/containerd" --config "$dir/config.toml" \
        >"$dir/containerd.log" 2>&1 &
    K8S_DAEMONS+=($!)
    NODE_PID=$!
    for _ in $(seq 200); do
        cri version >/dev/null 2>&1 && break
        kill -0 "$NODE_PID" 2>/dev/null || fail "containerd $1 exited: $(tail -5 "$dir/containerd.log")"
        sleep 0.05
    done
    cri version >/dev/null || fail "containerd $1 does not answer on $NODE_SOCK"
    cri pull "$SANDBOX_IMAGE" >/dev/null || fail "node $1 cannot pull the sandbox image"
}

# remove_pod POD: POD stopped and removed, as kubelet does, asking again (up to three times, a
# second apart) while containerd says it could not: under load, a StopPodSandbox failed once with
# "failed to kill container ...: ttrpc: closed" (its shim's connection gone) and kubelet retries
# such a call.
remove_pod() {
    local try
    for try in 1 2 3; do
        cri stop-pod "$1" >/dev/null && cri remove-pod "$1" >/dev/null && return 0
        sleep 1
    done
    fail "cannot remove pod $1 (asked $try times)"
}

# stop_node: the current node's containerd ends (its pods first), as a node that goes away.
stop_node() {
    local p sock pod keep=()
    for p in "${K8S_PODS[@]}"; do
        read -r sock pod <<<"$p"
        if [ "$sock" = "$NODE_SOCK" ]; then
            remove_pod "$pod"
        else
            keep+=("$p")
        fi
    done
    K8S_PODS=("${keep[@]}")
    kill "$NODE_PID"
    wait_gone "$NODE_PID" 20
}

# run_pod NAME: a pod on the current node (host network, its own pid namespace, and its own IPC
# namespace and /dev/shm unless POD_IPC says NODE: the host's); sets POD_ID and POD_JSON (its
# configuration, which CreateContainer gets again, as from kubelet).
POD_IPC=POD
run_pod() {
    POD_JSON=$NODE_DIR/pod-$1.json
    cat >"$POD_JSON" <<EOF
{"metadata": {"name": "$1", "uid": "uid-$1", "namespace": "default"},
 "log_directory": "$NODE_DIR/logs/$1",
 "linux": {"cgroup_parent": "/$K8S_CGROUP/$1",
           "security_context": {"namespace_options": {"network": "NODE", "pid": "POD", "ipc": "$POD_IPC"}}}}
EOF
    POD_ID=$(cri run-pod "$POD_JSON") || fail "RunPodSandbox $1 failed"
    K8S_PODS+=("$NODE_SOCK $POD_ID")
    POD_LOG=$NODE_DIR/logs/$1/work.log
}

# container_json FILE IMAGE DEVICES CONF [COMMAND...]: a ContainerConfig named "work" with the
# image IMAGE, the mounts (/usr, the build tree and the mock root ROOT at their own paths), the
# devices DEVICES (a JSON list of CRI Device objects, as a device plugin hands them out), the
# annotation org.criu.config=CONF, and COMMAND (none for a restore: it is the checkpoint's; so are
# the annotations, containerd keeps the checkpointed container's). POD_MOUNTS adds mounts (CRI
# Mount objects, separated by commas).
POD_MOUNTS=""
container_json() {
    local file=$1 image=$2 devices=$3 conf=$4; shift 4
    local cmd="" a
    for a in "$@"; do cmd+="${cmd:+, }$(json_string "$a")"; done
    cat >"$file" <<EOF
{"metadata": {"name": "work"},
 "image": {"image": $(json_string "$image")},
 ${cmd:+\"command\": [$cmd],}
 "log_path": "work.log",
 "mounts": [{"container_path": "/usr", "host_path": "/usr", "readonly": true},
            {"container_path": $(json_string "$BUILD_DIR"), "host_path": $(json_string "$BUILD_DIR"), "readonly": true},
            {"container_path": $(json_string "$ROOT"), "host_path": $(json_string "$ROOT")}${POD_MOUNTS:+,
            $POD_MOUNTS}],
 "devices": $devices,
 "annotations": {"org.criu.config": $(json_string "$conf")}}
EOF
}

# gpu_devices MINOR...: the CRI devices AMD's device plugin gives a container with the GPUs of
# these render minors: the node's /dev/kfd and each GPU's render node, nothing else of /dev/dri
# (here the mock machine's nodes, ROOT/dev/..., or those in GPU_NODES_DIR).
gpu_devices() {
    local list m dir=${GPU_NODES_DIR:-$ROOT/dev}
    list="{\"container_path\": \"/dev/kfd\", \"host_path\": $(json_string "$dir/kfd"), \"permissions\": \"rw\"}"
    for m in "$@"; do
        list+=", {\"container_path\": \"/dev/dri/renderD$m\", \"host_path\": $(json_string "$dir/dri/renderD$m"), \"permissions\": \"rw\"}"
    done
    echo "[$list]"
}

# start_container POD DEVICES CONF COMMAND...: CreateContainer and StartContainer in the pod
# POD_ID from the base image (pulled first, as kubelet does); sets CID.
start_container() {
    local devices=$1 conf=$2; shift 2
    cri pull "$BASE_IMAGE" >/dev/null || fail "PullImage $BASE_IMAGE failed"
    container_json "$NODE_DIR/container.json" "$BASE_IMAGE" "$devices" "$conf" "$@"
    CID=$(cri create "$POD_ID" "$NODE_DIR/container.json" "$POD_JSON") || fail "CreateContainer failed"
    cri start "$CID" || fail "StartContainer $CID failed"
}

# log_text FILE: a CRI container log (TIME STREAM TAG LINE) as the lines the container wrote.
log_text() { sed -E 's/^[^ ]+ (stdout|stderr) [FP] //' "$1"; }

# wait_for_log PATTERN [SECONDS]: the current container's log (POD_LOG) has a matching line.
wait_for_log() {
    local secs=${2:-60}
    for _ in $(seq $((secs * 10))); do
        log_text "$POD_LOG" 2>/dev/null | grep -qE "$1" && return 0
        sleep 0.1
    done
    fail "no line matching '$1' in $POD_LOG after ${secs}s: $(tail -3 "$POD_LOG" 2>/dev/null)"
}

# wait_exited [SECONDS]: the current container (CID) exits, with status 0.
wait_exited() {
    local secs=${1:-120} s=""
    for _ in $(seq $((secs * 5))); do
        s=$(cri status "$CID") || fail "ContainerStatus $CID failed"
        case "$s" in CONTAINER_EXITED*) break ;; esac
        sleep 0.2
    done
    [ "$s" = "CONTAINER_EXITED 0 Completed" ] ||
        fail "container $CID: '$s' after ${secs}s: $(log_text "$POD_LOG" | tail -5)"
}

# checkpoint_container ARCHIVE: CheckpointContainer (as kubelet's checkpoint API) of CID into
# ARCHIVE; the container keeps running. criu's log is the archive's dump.log, kept as
# $WORK/dump.log and checked (the plugin's ABI and backends, its core loaded).
#
# runc has criu freeze the container with its freezer cgroup before the plugin pauses the GPU.
# A real GPU's driver calls are system calls, which the freezer lets end; the mock's run in the
# process, so a freeze inside one fails the dump, and the plugin says so and asks for another try
# (a busy job is inside one now and then). That failure, and only that one, is tried again.
checkpoint_container() {
    # criu's log of a failed dump, as the shim keeps it.
    local try log=$NODE_DIR/state/io.containerd.runtime.v2.task/k8s.io/$CID/criu-dump.log
    for try in 1 2 3 4 5; do
        cri checkpoint "$CID" "$1" 120 2>"$WORK/checkpoint.err" && break
        grep -q "was frozen by its freezer cgroup .* inside a mock GPU driver call" "$log" 2>/dev/null ||
            fail "CheckpointContainer $CID failed: $(cat "$WORK/checkpoint.err"): $(grep -E "Error" "$log" 2>&1 | tail -5)"
        note "CheckpointContainer try $try: frozen inside a mock driver call (the plugin asks for another try)"
        [ "$try" != 5 ] || fail "CheckpointContainer caught the job inside a mock driver call 5 times"
        sleep 0.2
    done
    tar -xOf "$1" dump.log >"$WORK/dump.log" || fail "no dump.log in the checkpoint archive $1"
    check_abi "$WORK/dump.log"
    check_backend_origin "$WORK/dump.log"
    require_core "$WORK/dump.log"
    local s; s=$(cri status "$CID")
    case "$s" in
    CONTAINER_RUNNING*) ;;
    "CONTAINER_EXITED 0 "*)
        # It ran on to its end before its status was asked (under load, CheckpointContainer and
        # its retries can take longer than the rest of a scenario's run: k8s_unused_gpu and
        # k8s_two_of_four, with the e2e label at -j3 beside busy loops and a direct-I/O writer):
        # it kept running if it ended well, with its checksum.
        [ -n "$(log_text "$POD_LOG" | grep -E '^checksum ' | tail -1)" ] ||
            fail "the container exited 0 after the checkpoint without its checksum: $(log_text "$POD_LOG" | tail -3)"
        note "the container ran on to its end (exit 0, its checksum printed) before its status was asked"
        ;;
    *) fail "the container did not keep running after the checkpoint: $s" ;;
    esac
}

# checkpoint_image ARCHIVE NAME: the archive as a checkpoint image ($REGISTRY/e2e/NAME:1) pushed
# to the registry; sets CHECKPOINT_IMAGE.
checkpoint_image() {
    "$PYTHON" "$CRI_DIR/oci_image.py" checkpoint "$REGISTRY" "e2e/$2:1" "$1" work >/dev/null ||
        fail "cannot push the checkpoint image"
    CHECKPOINT_IMAGE=$REGISTRY/e2e/$2:1
}

# restore_container DEVICES CONF: as kubelet restores: PullImage of the checkpoint image, then
# CreateContainer from it in the current pod and StartContainer (containerd restores through
# runc and criu; it pulls the base image itself). Sets CID; criu's log is kept as
# $WORK/restore.log and checked.
restore_container() {
    cri pull "$CHECKPOINT_IMAGE" >/dev/null || fail "PullImage $CHECKPOINT_IMAGE failed"
    container_json "$NODE_DIR/restore.json" "$CHECKPOINT_IMAGE" "$1" "$2"
    CID=$(cri create "$POD_ID" "$NODE_DIR/restore.json" "$POD_JSON") ||
        fail "CreateContainer from the checkpoint image failed (see $NODE_DIR/containerd.log)"
    # criu's work dir while it runs (and after a failure); containerd's copy once restored.
    local work=$NODE_DIR/state/io.containerd.runtime.v2.task/k8s.io/$CID/work/restore.log
    local log=$NODE_DIR/root/io.containerd.runtime.v2.task/k8s.io/$CID/restore.log
    cri start "$CID" || { cp "$work" "$WORK/restore.log" 2>/dev/null; fail "StartContainer (the restore) failed"; }
    cp "$log" "$WORK/restore.log" || fail "no criu restore log at $log"
    grep -q "Restore finished successfully" "$WORK/restore.log" ||
        fail "criu's restore log does not say it finished ($WORK/restore.log)"
    check_abi "$WORK/restore.log"
    check_backend_origin "$WORK/restore.log"
    require_core "$WORK/restore.log"
}

# k8s_machine GPUS: the node's mock machine (ROOT, GPUS GPUs) and criu's options for it
# ($WORK/criu.conf, the containers' org.criu.config).
k8s_machine() {
    ROOT=$(make_machine machine --gpus "$1")
    write_k8s_criu_conf "$WORK/criu.conf"
}

# cpu_checksum ARGS...: the checksum of an uninterrupted run of e2e-cpu-workload ARGS.
CPU_WORKLOAD=$BUILD_DIR/tests/e2e/e2e-cpu-workload
cpu_checksum() { "$CPU_WORKLOAD" "$@" --step-ms 0 | grep '^checksum ' | awk '{print $2}'; }

# write_k8s_criu_conf FILE: criu's options for the node's runc: the plugin's folder and the mock
# root ROOT (a plugin option: criu 4.3).
write_k8s_criu_conf() {
    criu_has_plugin_option || fail "criu $CRIU_VERSION has no --plugin-option (the k8s scenarios need 4.3)"
    {
        echo "# criu options for containerd's checkpoints and restores (criu-amdgpu e2e)"
        echo "libdir $PLUGIN_DIR"
        echo "plugin-option amdgpu.mock-root=$ROOT"
    } >"$1"
}

# other_node_machine: the mock machine becomes another node's (a k8s_move BETWEEN; lib.sh).
other_node_machine() { replace_machine "$ROOT"; }

# ls_archive_images: the criu images in the checkpoint archive ($WORK/checkpoint.tar).
ls_archive_images() { tar -tf "$WORK/checkpoint.tar" | sed -n 's|^checkpoint/||p'; }

# k8s_move DEVICES_A DEVICES_B BETWEEN COMMAND...: a job moved between nodes as Kubernetes moves
# it. Node A runs COMMAND in a pod whose container is given DEVICES_A (and the criu options of
# $WORK/criu.conf, write_k8s_criu_conf); once its log shows step 30 it is checkpointed
# (CheckpointContainer, it keeps running), the archive becomes a checkpoint image in the registry,
# and node A goes away. BETWEEN then changes the machine (the next node's GPUs); node B, a new
# containerd that has never seen the images, restores the container as a new pod given
# DEVICES_B, pulling the checkpoint image and the base image from the registry. The restored
# container must run to the end and exit 0; its log (the checkpointed part and the rest) is
# $WORK/out.txt, and ROUND_CHECKSUM the checksum it printed last.
k8s_move() {
    local devices_a=$1 devices_b=$2 between=$3; shift 3
    start_registry
    push_images
    start_node node-a
    run_pod job
    start_container "$devices_a" "$WORK/criu.conf" "$@"
    wait_for_log ": step 30/"
    checkpoint_container "$WORK/checkpoint.tar"
    note "CheckpointContainer: $(du -k "$WORK/checkpoint.tar" | cut -f1) KiB archive, the container kept running"
    checkpoint_image "$WORK/checkpoint.tar" job-checkpoint
    stop_node
    "$between"
    start_node node-b
    run_pod job-restored
    restore_container "$devices_b" "$WORK/criu.conf"
    wait_exited 120
    log_text "$POD_LOG" >"$WORK/out.txt"
    # Restored, not started again: the new pod's log begins where the checkpoint was taken.
    local first
    first=$(grep -m1 -oE ': step [0-9]+/' "$WORK/out.txt" | grep -oE '[0-9]+')
    [ "${first:-1}" -gt 30 ] ||
        fail "the new pod's container started from step ${first:-?}, not from the checkpoint"
    ROUND_CHECKSUM=$(checksum_of "$WORK/out.txt")
    [ -n "$ROUND_CHECKSUM" ] || fail "the restored container printed no checksum: $(tail -3 "$WORK/out.txt")"
}
