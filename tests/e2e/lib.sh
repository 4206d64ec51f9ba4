# Shared steps of the end-to-end scenarios: a mock GPU machine, a workload in its own pid
# namespace, real criu dumping and restoring it through the plugin. Sourced by scenario_*.sh.
# Needs: BUILD_DIR (the build tree), CRIU (a criu that runs here; scripts/get-criu.sh).
# Optional: CRIU_VERSION (criu's version; asked from criu when unset).
# With E2E_INSTALLED=1 the scenarios run against the installed Debian packages instead: the tool
# and workload from /usr/bin, and criu is given no -L, so it loads the plugin from its default
# plugin directory, /usr/lib/criu (scripts/test-release.sh).
set -euo pipefail

# The scenarios on AMD's thunk take turns machine-wide, not only within one CTest run (their
# RESOURCE_LOCK): every dump of the thunk's semaphore makes /dev/shm/link_remap.ID with the same
# ID, and one of another build tree's runs on the same machine, ending between a dump and its
# restore, removed the link (kfd_driver_lib.sh removes those its run made) or made its dump fail on
# the name: a restore found /dev/shm/link_remap.18 gone while helpers' trees ran their tests. The
# lock is held by flock itself (-o), so nothing the scenario starts inherits it.
case "${0##*/}" in
scenario_kfd_driver*.sh | bench_vs_upstream.sh | bench_kfd_load.sh)
    if [ -z "${E2E_THUNK_TURN:-}" ]; then
        E2E_THUNK_TURN=1 exec flock -o /dev/shm/criu-amdgpu-thunk-e2e.turn bash "$0" "$@"
    fi
    ;;
esac

# CTest leaves its log (Testing/Temporary/LastTest.log.tmp) open in the tests it starts. A workload
# would inherit that fd and criu would dump it; while other scenarios run beside this one the log
# grows, and the restore fails ("has bad size"). Nothing of a scenario needs an inherited fd
# above 2: close them all.
for inherited in /proc/$$/fd/*; do
    inherited=${inherited##*/}
    case "$inherited" in 0 | 1 | 2 | 255) ;; *) eval "exec $inherited>&-" 2>/dev/null || true ;; esac
done
unset inherited

: "${BUILD_DIR:?BUILD_DIR must name the build tree}"
: "${CRIU:?CRIU must name a criu executable (scripts/get-criu.sh prints one)}"
if [ "${E2E_INSTALLED:-0}" = 1 ]; then
    TOOL=/usr/bin/criu-amdgpu WORKLOAD=/usr/bin/mockgpu-workload PLUGIN_DIR=/usr/lib/criu
    unset CRIU_LIBS_DIR # criu would read its plugins from there instead of its default directory
else
    TOOL="$BUILD_DIR/bin/criu-amdgpu" WORKLOAD="$BUILD_DIR/bin/mockgpu-workload"
    PLUGIN_DIR="$BUILD_DIR/lib/criu"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/criu-amdgpu-e2e.XXXXXX")
STARTED_PIDS=()
CRIU_VERSION=${CRIU_VERSION:-$("$CRIU" --version 2>/dev/null | awk '/^Version:/{print $2}')}

cleanup() {
    for p in "${STARTED_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    remove_devices_cgroups
    if [ "${KEEP_WORK:-0}" = 1 ]; then echo "work dir kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# enter_devices_cgroup MINOR...: moves this shell (and so the criu it starts, and the processes
# criu restores with --manage-cgroups=ignore) into a cgroup v1 devices cgroup of this run's own
# that refuses reading and writing the render nodes 226:MINOR (mknod stays allowed), as the devices
# cgroup of a pod that was not given those GPUs. leave_devices_cgroup moves it back (what it
# started stays inside); the EXIT trap kills what is left inside and removes the cgroups.
DEVICES_CGROUPS=/sys/fs/cgroup/devices
DEVICES_CGROUP=
DEVICES_CGROUP_HOME=
MADE_DEVICES_CGROUPS=()
enter_devices_cgroup() {
    [ -w "$DEVICES_CGROUPS/cgroup.procs" ] ||
        fail "no cgroup v1 devices controller at $DEVICES_CGROUPS: this scenario stands a pod's devices cgroup in with it"
    leave_devices_cgroup
    DEVICES_CGROUP_HOME=$DEVICES_CGROUPS$(awk -F: '$2 == "devices" {print $3}' /proc/self/cgroup)
    DEVICES_CGROUP=$DEVICES_CGROUP_HOME/criu-amdgpu-e2e-$$-${#MADE_DEVICES_CGROUPS[@]}
    mkdir "$DEVICES_CGROUP" || fail "cannot make $DEVICES_CGROUP"
    MADE_DEVICES_CGROUPS+=("$DEVICES_CGROUP")
    local m
    for m in "$@"; do
        echo "c 226:$m rw" >"$DEVICES_CGROUP/devices.deny" || fail "cannot deny 226:$m in $DEVICES_CGROUP"
    done
    echo $$ >"$DEVICES_CGROUP/cgroup.procs" || fail "cannot enter $DEVICES_CGROUP"
}
leave_devices_cgroup() {
    [ -n "$DEVICES_CGROUP" ] || return 0
    echo $$ >"$DEVICES_CGROUP_HOME/cgroup.procs" 2>/dev/null || true
    DEVICES_CGROUP=
}
remove_devices_cgroups() {
    leave_devices_cgroup
    local cg p
    for cg in "${MADE_DEVICES_CGROUPS[@]}"; do
        for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
        for _ in $(seq 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
    done
}

# fail MESSAGE: says MESSAGE and the errors of the scenario's logs, and ends the scenario. A log
# with no matching line is no reason to stop showing the others (grep's status 1, under pipefail).
fail() {
    echo "FAIL: $*" >&2
    local f
    for f in "$WORK"/*.log "$WORK"/*/dump.log "$WORK"/*/restore.log "$WORK"/*/criu-stderr.log; do
        [ -f "$f" ] || continue
        echo "--- $f" >&2
        { grep -E "Error|amdgpu" "$f" || true; } | tail -25 >&2
    done
    # criu's links of unlinked files (a thunk's semaphore in /dev/shm): what each log says of them
    # and what /dev/shm holds now (a restore that finds its link gone, seen once under load).
    if grep -qs link_remap "$WORK"/*.log "$WORK"/*/*.log; then
        echo "--- link_remap in the logs, and /dev/shm now" >&2
        grep -hs link_remap "$WORK"/*.log "$WORK"/*/*.log | tail -10 >&2
        ls -la --time-style=+%T.%N /dev/shm >&2 || true
    fi
    exit 1
}
note() { echo "== $*"; }

# make_machine NAME ARGS...: a mock machine from a generated topology; prints its root.
make_machine() {
    local name=$1; shift
    "$TOOL" topology generate --out "$WORK/$name-topology" "$@" >/dev/null
    "$TOOL" mock init --root "$WORK/$name" --topology "$WORK/$name-topology" >/dev/null
    echo "$WORK/$name"
}

# replace_machine ROOT [GPU_ID_BASE [RENDER_MINOR_BASE]]: the mock machine at ROOT becomes
# another, larger one (another node): four GPUs with other gpu_ids (from GPU_ID_BASE, default
# 0x4000, in steps of 0x111) and render minors (from RENDER_MINOR_BASE, default 150).
replace_machine() {
    local root=$1
    rm -rf "$WORK/replacement-topology"
    "$TOOL" topology generate --out "$WORK/replacement-topology" --gpus 4 \
        --gpu-id-base "${2:-0x4000}" --render-minor-base "${3:-150}" >/dev/null
    rm -rf "$root"
    "$TOOL" mock init --root "$root" --topology "$WORK/replacement-topology" >/dev/null
}

# start_workload OUT ARGS...: starts the workload as pid 1 of a new pid namespace, session
# leader, output to OUT, in this scenario's work folder (or WORKLOAD_DIR, when several workloads
# may be dumped at the same moment: see below); sets WPID to its pid. WORKLOAD_MOUNT_NS, a pid,
# starts it in that process's mount namespace (nsenter).
start_workload() {
    local out=$1; shift
    # The working folder is this scenario's own: to dump the init of a pid namespace, criu's
    # parasite makes a folder named proc.crtools in the task's working folder (pie/parasite.c).
    # When workloads shared CTest's folder, two scenarios dumping at the same moment collided
    # there and one dump failed ("Can't create a directory (-17)").
    # Only the workload writes to OUT: unshare's own messages (when its child is killed by a dump)
    # would change the file behind criu's back and fail the restore's file-size check.
    # OUT is emptied here too, before anything waits on it: the child empties it only once it runs,
    # and a caller's wait_for_line could first find the lines of an earlier run in it.
    : >"$out"
    local enter=()
    [ -z "${WORKLOAD_MOUNT_NS:-}" ] || enter=(nsenter -t "$WORKLOAD_MOUNT_NS" -m --)
    (cd "${WORKLOAD_DIR:-$WORK}" && exec "${enter[@]}" unshare --pid --fork setsid /bin/sh -c \
        'out=$1; shift; exec "$@" </dev/null >"$out" 2>&1' sh "$out" "$@" </dev/null \
        >>"$WORK/unshare.log" 2>&1) &
    local ushare=$!
    STARTED_PIDS+=("$ushare")
    WPID=""
    for _ in $(seq 100); do
        WPID=$(pgrep -P "$ushare" || true)
        [ -n "$WPID" ] && break
        sleep 0.05
    done
    [ -n "$WPID" ] || fail "the workload did not start"
    STARTED_PIDS+=("$WPID")
}

# wait_for_next_step FILE WHO: waits until WHO ("rank 3", "parent", ...) of the workload writing
# FILE has taken a step more than FILE shows now (after a restore: a step of the restored process).
wait_for_next_step() {
    local file=$1 who=$2 last
    last=$(grep -oE "^$who: step [0-9]+/" "$file" | tail -1 | grep -oE '[0-9]+/' | tr -d /)
    wait_for_line "$file" "^$who: step $((${last:-0} + 1))/" 120
}

# wait_for_line FILE PATTERN [SECONDS]
wait_for_line() {
    local file=$1 pattern=$2 secs=${3:-60}
    for _ in $(seq $((secs * 20))); do
        grep -qE "$pattern" "$file" 2>/dev/null && return 0
        sleep 0.05
    done
    fail "no line matching '$pattern' in $file after ${secs}s: $(tail -3 "$file" 2>/dev/null)"
}

# gpu_commands_completed ROOT: the fewest commands any queue on the mock machine at ROOT has
# completed (empty when it has no queue). A workload whose output cannot be a file (it runs on
# after a --leave-running dump, and a file it grows would fail the restore's file-size check)
# shows its progress there: its setup completes one fill per rewritten buffer on each GPU's queue,
# each step one command more per rewritten buffer.
gpu_commands_completed() {
    "$TOOL" mock status --root "$1" |
        awk '$1 == "queue" && $5 == "completed" { if (min == "" || $6 < min) min = $6 } END { print min }'
}
# wait_for_gpu_commands ROOT QUEUES N: waits until the mock machine at ROOT has QUEUES queues, each
# of which has completed at least N commands.
wait_for_gpu_commands() {
    local root=$1 queues=$2 n=$3 status end=$((SECONDS + 120))
    while [ "$SECONDS" -lt "$end" ]; do
        status=$("$TOOL" mock status --root "$root")
        awk -v q="$queues" -v n="$n" '$1 == "queue" && $5 == "completed" { seen++; if ($6 < n) low++ }
            END { exit !(seen == q && low == 0) }' <<<"$status" && return 0
        sleep 0.05
    done
    fail "the $queues queue(s) on $root did not complete $n commands each in 120 s: $status"
}

# finish_stopped ROOT OUT ARGS...: ends a workload started with ARGS and
# `--steps 100000 --stop-file "$WORK/stop"` (it steps until the scenario is done with it: a fixed
# number of steps could run out before criu reached it under ASan and load), then sets GOT, its
# checksum, and EXPECTED, that of an uninterrupted run of as many steps on ROOT. STOP_FILE names
# the host's path of the stop file when the workload sees it elsewhere (in a container).
finish_stopped() {
    touch "${STOP_FILE:-$WORK/stop}"
    wait_for_line "$2" "^checksum " 120
    stopped_checksums "$@"
}
# stopped_checksums ROOT OUT ARGS...: GOT and EXPECTED (as finish_stopped) of the output OUT of a
# workload that has stopped, and STOPPED_AFTER, its step count. A workload of several processes
# (--fork, --ranks) says after which step each stopped ("WHO: stopped after step N") and prints
# each one's checksum ("WHO checksum <hex>"): GOT lists each process's checksum (WHO=<hex>, then
# the whole run's when every process stopped after the same step), EXPECTED the same lines of an
# uninterrupted run of as many steps as that process took, and STOPPED_AFTER says each count.
stopped_checksums() {
    local root=$1 out=$2
    shift 2
    local stops
    # The last "stopped after" line of each process ("workload", "parent", "child", "rank R").
    stops=$(awk '/^[a-z]+( [0-9]+)?: stopped after step [0-9]+$/ {
                     n = $NF; sub(/: stopped after step [0-9]+$/, ""); last[$0] = n }
                 END { for (w in last) print w "|" last[w] }' "$out" | sort)
    [ -n "$stops" ] || fail "the workload did not say after which step it stopped ($out)"
    if [[ $stops =~ ^workload\|[0-9]+$ ]]; then
        STOPPED_AFTER=${stops#workload|}
        EXPECTED=$(reference_checksum "$root" "$@" --steps "$STOPPED_AFTER")
        GOT=$(checksum_of "$out")
        return
    fi
    stopped_checksums_per_process "$root" "$out" "$stops" "$@"
}
# stopped_checksums_per_process ROOT OUT STOPS ARGS...: stopped_checksums of a workload of several
# processes, whose STOPS are lines WHO|N.
stopped_checksums_per_process() {
    local root=$1 out=$2 stops=$3
    shift 3
    local who n got exp counts printed
    local -A reference=()
    GOT="" EXPECTED="" STOPPED_AFTER=""
    while IFS='|' read -r who n; do
        [ -n "${reference[$n]:-}" ] ||
            reference[$n]=$("$WORKLOAD" --root "$root" --step-ms 0 "$@" --steps "$n")
        exp=$(grep -E "^$who checksum " <<<"${reference[$n]}" | awk '{print $NF}')
        [ -n "$exp" ] || fail "an uninterrupted run of $n steps has no process '$who'"
        got=$(grep -E "^$who checksum " "$out" | tail -1 | awk '{print $NF}')
        GOT+="${GOT:+ }$who=$got" EXPECTED+="${EXPECTED:+ }$who=$exp"
        STOPPED_AFTER+="${STOPPED_AFTER:+, }$who $n"
    done <<<"$stops"
    # Every process that printed a checksum said when it stopped.
    printed=$(grep -oE '^[a-z]+( [0-9]+)? checksum ' "$out" | sed 's/ checksum $//' | sort -u)
    [ "$printed" = "$(cut -d'|' -f1 <<<"$stops")" ] ||
        fail "not every process of the workload said after which step it stopped ($out): $stops"
    counts=$(cut -d'|' -f2 <<<"$stops" | sort -u)
    if [ "$(wc -l <<<"$counts")" = 1 ]; then
        GOT+=" whole=$(checksum_of "$out")"
        EXPECTED+=" whole=$(grep -E '^checksum ' <<<"${reference[$counts]}" | awk '{print $2}')"
    fi
}
# checksum_of FILE: the checksum the workload printed last.
checksum_of() { grep -E '^checksum ' "$1" | tail -1 | awk '{print $2}'; }

# expect_stopped_result ROOT WHAT ARGS...: as expect_result, for a workload of ARGS that its stop
# file ended: the result must be that of an uninterrupted run of as many steps on ROOT (the
# result file says after which step it stopped). Sets EXPECTED and GOT.
expect_stopped_result() {
    local root=$1 what=$2
    shift 2
    [ -f "$WORK/result.txt" ] || fail "$what: the workload wrote no result"
    stopped_checksums "$root" "$WORK/result.txt" "$@"
    [ "$GOT" = "$EXPECTED" ] || fail "$what: checksums $GOT, expected $EXPECTED"
    rm -f "$WORK/result.txt"
}

# reference_checksum ROOT ARGS...: checksum of an uninterrupted run.
reference_checksum() {
    local root=$1; shift
    "$WORKLOAD" --root "$root" --step-ms 0 "$@" | grep -E '^checksum ' | awk '{print $2}'
}

# two_gpu_workload SIZE STEPS: a two-GPU mock machine (ROOT, exported as CRIU_AMDGPU_MOCK_ROOT),
# the workload's ARGS (2 buffers of SIZE bytes per GPU, STEPS steps) and EXPECTED, the checksum of
# an uninterrupted run.
two_gpu_workload() {
    ROOT=$(make_machine machine --gpus 2)
    export CRIU_AMDGPU_MOCK_ROOT=$ROOT
    ARGS=(--gpus 2 --buffers 2 --size "$1" --steps "$2")
    EXPECTED=$(reference_checksum "$ROOT" "${ARGS[@]}")
}

# dump_at_step3: runs the workload of ARGS (output $WORK/out.txt, 100 ms per step), dumps it into
# $WORK/img at step 3 (the task ends) and keeps its output at the dump as $WORK/out.at-dump.
dump_at_step3() {
    start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100
    wait_for_line "$WORK/out.txt" "step 3/"
    criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
    wait_gone "$WPID" 10
    cp "$WORK/out.txt" "$WORK/out.at-dump"
}

# use_fd_audit_plugin: criu loads the plugins of $WORK/plugins: amdgpu_plugin.so with its backends,
# and the audit plugin FD_AUDIT_PLUGIN (fd_audit_plugin.c), which records criu's fds when criu
# loads it and as criu exits into CRIU_FD_AUDIT_DIR ($WORK/fd-audit) as criu-PID.init and .exit.
use_fd_audit_plugin() {
    : "${FD_AUDIT_PLUGIN:?FD_AUDIT_PLUGIN must name the audit plugin (fd_audit.so)}"
    PLUGIN_DIR="$WORK/plugins"
    mkdir -p "$PLUGIN_DIR"
    ln -s "$BUILD_DIR/lib/criu/amdgpu_plugin.so" "$BUILD_DIR/lib/criu/amdgpu" "$PLUGIN_DIR/"
    ln -s "$FD_AUDIT_PLUGIN" "$PLUGIN_DIR/fd_audit.so"
    export CRIU_FD_AUDIT_DIR="$WORK/fd-audit"
    mkdir -p "$CRIU_FD_AUDIT_DIR"
}

# criu_has_plugin_option: the criu under test accepts --plugin-option (4.3+).
criu_has_plugin_option() {
    local help
    help=$("$CRIU" --help 2>&1 || true)
    grep -q -- '--plugin-option' <<<"$help"
}

# json_string TEXT: TEXT as a JSON string.
json_string() {
    local s=${1//\\/\\\\}
    s=${s//\"/\\\"}
    printf '"%s"' "$s"
}

# run_criu ARGS...: criu with the plugin under test: -L PLUGIN_DIR, or against the installed
# packages no -L at all. criu loads the plugins of one directory only: -L replaces its default.
run_criu() {
    if [ "${E2E_INSTALLED:-0}" = 1 ]; then "$CRIU" "$@"; else "$CRIU" "$@" -L "$PLUGIN_DIR"; fi
}

# check_backend_origin LOG: every backend library the plugin loaded (if any) came from
# PLUGIN_DIR/amdgpu, the folder beside the plugin: criu loaded the plugin under test, no other.
# Paths are compared canonical: a scenario may link the plugin and its folder into PLUGIN_DIR.
check_backend_origin() {
    local dir path wrong=""
    dir=$(realpath -m "$PLUGIN_DIR/amdgpu")
    while read -r path; do
        [[ "$(realpath -m "$path")" == "$dir/"* ]] || wrong+="$path "
    done < <(grep -oE "backend [a-z-]+ \(/[^)]*\.so\)" "$1" 2>/dev/null | sed -E 's/.*\((.*)\)/\1/')
    [ -z "$wrong" ] || fail "the plugin loaded backends from outside $dir: $wrong"
}

# criu_dump DIR PID [criu args...]: dumps with the plugin, once (a dump never has to be retried:
# the mock driver's calls are atomic with respect to the freeze). Returns criu's status.
criu_dump() {
    local dir=$1 pid=$2; shift 2
    mkdir -p "$dir"
    # The log is in criu's working directory: the image directory unless -W moves it.
    local logdir=$dir prev=""
    for a in "$@"; do
        if [ "$prev" = -W ]; then logdir=$a; fi
        prev=$a
    done
    local rc=0
    run_criu dump -t "$pid" -D "$dir" -v4 -o dump.log "$@" 2>"$dir/criu-stderr.log" || rc=$?
    if [ "$rc" -ne 0 ] && [ -s "$dir/criu-stderr.log" ]; then
        echo "--- criu's stderr:" >&2
        tail -5 "$dir/criu-stderr.log" >&2
    fi
    if [ "$rc" -eq 0 ]; then check_abi "$logdir/dump.log"; fi
    check_backend_origin "$logdir/dump.log"
    return "$rc"
}

# expected_hooks: the hooks the plugin must declare under this criu (its CR_PLUGIN_HOOK__MAX,
# measured on Debian's builds); "" for a criu not in the table.
expected_hooks() {
    case "$CRIU_VERSION" in
        4.0* | 4.1*) echo 12 ;;
        4.2*) echo 13 ;;
        4.3*) echo 17 ;;
        *) echo "" ;;
    esac
}

# check_abi LOG: criu's own log line says the plugin declared exactly the hooks this criu has
# (amdgpu_plugin.so's core is loaded), or none at all, with the plugin saying why its core is not
# loaded (nothing in the run can involve an AMD GPU).
check_abi() {
    local log=$1 want got
    want=$(expected_hooks)
    got=$(grep -oE 'Plugin "amdgpu_plugin" \(version [0-9]+ hooks [0-9]+\)' "$log" | head -1 |
          grep -oE '[0-9]+\)$' | tr -d ')')
    [ -n "$got" ] || fail "criu did not load amdgpu_plugin ($log)"
    if [ "$got" = 0 ]; then
        grep -q "amdgpu_plugin: inert, its core is not loaded" "$log" ||
            fail "the plugin declared no hook and did not say why ($log)"
        return 0
    fi
    [ -z "$want" ] || [ "$got" = "$want" ] ||
        fail "criu $CRIU_VERSION has $want hooks, the plugin declared $got ($log)"
}

# require_core LOG: the plugin's core was loaded (criu's log shows a declared hook).
require_core() {
    grep -qE 'Plugin "amdgpu_plugin" \(version [0-9]+ hooks [1-9]' "$1" ||
        fail "the plugin's core was not loaded ($1)"
}

# criu_restore DIR: restores detached; sets RPID from the pidfile.
criu_restore() {
    local dir=$1; shift
    rm -f "$dir/restored.pid"
    run_criu restore -D "$dir" -v4 -o restore.log -d --pidfile "$dir/restored.pid" "$@" ||
        fail "criu restore failed (see $dir/restore.log)"
    check_abi "$dir/restore.log"
    check_backend_origin "$dir/restore.log"
    RPID=$(cat "$dir/restored.pid")
    STARTED_PIDS+=("$RPID")
}

# allocated_bytes FILE...: the bytes the files take on disk (holes take none).
allocated_bytes() {
    local n=0 f
    for f in "$@"; do n=$((n + $(stat -c '%b * %B' "$f"))); done
    echo "$n"
}

# expect_result WHAT: the workload's --result file ($WORK/result.txt) holds EXPECTED (sets GOT),
# and is removed for the next run.
expect_result() {
    [ -f "$WORK/result.txt" ] || fail "$1: the workload wrote no result"
    GOT=$(checksum_of "$WORK/result.txt")
    [ "$GOT" = "$EXPECTED" ] || fail "$1: checksum $GOT, expected $EXPECTED"
    rm -f "$WORK/result.txt"
}

# restore_stopped DIR WHAT: after a GPU reset, restores DIR, of the workload of ARGS on ROOT run
# with a stop file that is there by now: the restored workload finds it, ends, and its result must
# be that of an uninterrupted run of as many steps (expect_stopped_result WHAT).
restore_stopped() {
    "$TOOL" mock reset --root "$ROOT" >/dev/null
    criu_restore "$1"
    wait_gone "$RPID" 60
    expect_stopped_result "$ROOT" "$2" "${ARGS[@]}"
}

# restore_result DIR WHAT [criu args...]: after a GPU reset, restores DIR, waits for the restored
# workload to finish and checks its result (expect_result WHAT).
restore_result() {
    local dir=$1 what=$2; shift 2
    "$TOOL" mock reset --root "$ROOT" >/dev/null
    criu_restore "$dir" "$@"
    wait_gone "$RPID" 60
    expect_result "$what"
}

# flip_byte FILE OFFSET: every bit of the byte at OFFSET flipped, so it surely differs (writing a
# constant there leaves random or encrypted bytes as they were one time in 256).
flip_byte() {
    local byte
    byte=$(od -An -tu1 -j"$2" -N1 "$1" | tr -d ' ')
    [ -n "$byte" ] || fail "$1 has no byte at $2"
    printf "\\$(printf %o $((byte ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
    [ "$(od -An -tu1 -j"$2" -N1 "$1" | tr -d ' ')" = $((byte ^ 255)) ] || fail "could not flip byte $2 of $1"
}

# craft_copy FROM NAME MUTATION...: $WORK/NAME, a copy of the checkpoint FROM without its logs and
# pidfiles, MUTATION run in it (a hostile registry's checkpoint, for restore_refused).
craft_copy() {
    local from=$1 name=$2
    shift 2
    cp -a "$from" "$WORK/$name"
    rm -f "$WORK/$name"/*.log "$WORK/$name"/*.pid
    (cd "$WORK/$name" && "$@")
}

# restore_refused DIR WHAT [criu args...]: after a machine reset (refused_restore_reset), criu
# restore of DIR fails within 60 s, its log saying WHAT; no process was restored, the machine holds
# nothing of it (refused_restore_left DIR) and nothing appeared beside DIR.
restore_refused() {
    local dir=$1 what=$2 rc=0 before
    shift 2
    refused_restore_reset
    before=$(ls -A "$(dirname "$dir")")
    timeout 60 "$CRIU" restore -D "$dir" -L "$PLUGIN_DIR" -v4 -o restore.log -d \
        --pidfile "$dir/restored.pid" "$@" 2>/dev/null || rc=$?
    [ "$rc" -ne 124 ] || fail "$dir: criu restore hung"
    [ "$rc" -ne 0 ] || fail "$dir: restored when it should have been refused"
    [ ! -s "$dir/restored.pid" ] || fail "$dir: criu wrote the pid of a restored process"
    [ "$(ls -A "$(dirname "$dir")")" = "$before" ] || fail "$dir: the restore made files beside it"
    refused_restore_left "$dir"
    grep -qF "$what" "$dir/restore.log" ||
        fail "$dir: criu's log does not say '$what': $(grep -E 'amdgpu' "$dir/restore.log" | tail -3)"
    note "$(basename "$dir") refused: $(grep -F "$what" "$dir/restore.log" | head -1 | sed -E 's/^\([0-9. ]+\) *//')"
}
# The machine of restore_refused: the mock GPU at ROOT, reset before each restore and holding no
# open device after it. A scenario on another machine (kfd_driver_lib.sh) defines its own.
refused_restore_reset() { "$TOOL" mock reset --root "$ROOT" >/dev/null; }
refused_restore_left() {
    "$TOOL" mock status --root "$ROOT" | grep -q "^no open devices" ||
        fail "$1: the failed restore left something on the GPU: $("$TOOL" mock status --root "$ROOT")"
}

# wait_gone PID [SECONDS]
wait_gone() {
    local pid=$1 secs=${2:-60}
    for _ in $(seq $((secs * 20))); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.05
    done
    fail "process $pid still running after ${secs}s"
}

# fds_of PID: "fd -> target" lines of the process's lasting fds. Mock device contexts and pipe
# inodes are normalised (both change across a restore); fds of a driver call in progress (the
# context's lock file) are transient and left out.
fds_of() {
    local pid=$1 fd target
    for fd in /proc/"$pid"/fd/*; do
        target=$(readlink "$fd" 2>/dev/null) || continue
        case "$target" in */state/contexts/*/busy) continue ;; esac
        printf '%s -> %s\n' "${fd##*/}" "$(sed -E 's|/state/contexts/[0-9]+/|/state/contexts/N/|; s|^pipe:\[[0-9]+\]$|pipe|' <<<"$target")"
    done | sort -n
}

# run_cpu_case NAME PLUGIN_DIR HOLD [VAR=VALUE | -u VAR ...]: e2e-cpu-workload (holding device
# HOLD open unless it is "-") is dumped and restored with criu loading the plugins in PLUGIN_DIR,
# under the given environment changes and with the criu arguments in the array CRIU_ARGS (if
# set); it must finish with $EXPECTED. The scenario may define check_dumped NAME and
# check_restored NAME PID, called after each step.
run_cpu_case() {
    local name=$1 dir=$2 hold=$3; shift 3
    local img="$WORK/img-$name" hold_args=()
    [ "$hold" = - ] || hold_args=(--hold "$hold")
    rm -f "$WORK/result.txt" "$WORK/go-$name"
    # It waits after step 3 until the dump is taken (and, restored, until go-$name exists).
    start_workload "$WORK/out-$name.txt" "$BUILD_DIR/tests/e2e/e2e-cpu-workload" --steps 15 \
        --step-ms 100 "${hold_args[@]}" --result "$WORK/result.txt" --go-file "$WORK/go-$name" \
        --wait-at 3
    wait_for_line "$WORK/out-$name.txt" "waiting for"
    mkdir -p "$img"
    local extra=()
    if declare -p CRIU_ARGS >/dev/null 2>&1; then extra=("${CRIU_ARGS[@]}"); fi
    env "$@" "$CRIU" dump -t "$WPID" -D "$img" -L "$dir" -v4 -o dump.log "${extra[@]}" ||
        fail "$name: dump failed"
    wait_gone "$WPID" 10
    ls "$img" | grep -q '^amdgpu-' && fail "$name: amdgpu images written for a process without an AMD GPU"
    touch "$WORK/go-$name"
    if declare -F check_dumped >/dev/null; then check_dumped "$name"; fi
    env "$@" "$CRIU" restore -D "$img" -L "$dir" -v4 -o restore.log -d --pidfile "$img/pid" \
        "${extra[@]}" || fail "$name: restore failed"
    if [ -e "$dir/amdgpu_plugin.so" ]; then
        check_abi "$img/dump.log"
        check_abi "$img/restore.log"
    fi
    local pid; pid=$(cat "$img/pid")
    STARTED_PIDS+=("$pid")
    if declare -F check_restored >/dev/null; then check_restored "$name" "$pid"; fi
    wait_gone "$pid" 60
    local got; got=$(checksum_of "$WORK/result.txt")
    [ "$got" = "$EXPECTED" ] || fail "$name: checksum $got, expected $EXPECTED"
    CASE_CHECKSUM=$got
}
