#!/usr/bin/env bash
# A process given some of the node's GPUs, as AMD's device plugin gives a container GPUs (/dev/kfd
# and one render node per GPU in its /dev, while sysfs lists every GPU of the node): the workload
# opens only the GPU it sees, and a restore "in a new pod" given another GPU maps onto that one.
# Reproduces criu issue 2888 (the restore into a new pod failed with "Can't open drm render fd:
# No such file or directory" because the new pod was given another GPU). A new pod given no GPU
# it can use: the restore fails before touching any GPU, naming the GPUs and the nodes the pod
# lacks, and `criu-amdgpu image check --dev` says the same beforehand. Each restore runs in a
# devices cgroup that refuses the GPUs the new pod was not given, as a pod's cgroup does: the
# kernel, not the files in the pod's /dev, says which GPUs the restored process may use.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine node --gpus 3 --gpu-id-base 0x2000 --render-minor-base 130)
ARGS=(--gpus 1 --buffers 2 --size 131072)
POD=$WORK/pod-dev # the pod's /dev, as the container runtime makes it from the device plugin's list
mkdir -p "$POD/dri"
cp -a "$ROOT/dev/kfd" "$POD/"
give() { cp -a "$ROOT/dev/dri/renderD$1" "$POD/dri/"; }
give 131

export CRIU_AMDGPU_MOCK_ROOT=$ROOT
# It steps until the scenario is done with it: a fixed count of steps (25) ran out under load (the
# ASan build, 3 tests at a time) before the status after the restore was read ("no open devices").
start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" --dev-dir "$POD" "${ARGS[@]}" --step-ms 100 \
    --steps 100000 --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 4/"
"$TOOL" mock status --root "$ROOT" | grep -q "renderD131" ||
    fail "the workload did not open the one GPU its pod was given: $("$TOOL" mock status --root "$ROOT")"
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
"$TOOL" mock reset --root "$ROOT" >/dev/null

# The new pod was given no GPU: said beforehand, and the restore refuses before touching a GPU.
rm "$POD/dri/renderD131"
rc=0
"$TOOL" image check "$WORK/img" --dev "$POD" >"$WORK/check-none.txt" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "image check --dev of a pod without GPUs answered $rc: $(cat "$WORK/check-none.txt")"
grep -q "can open none of the 3 GPUs" "$WORK/check-none.txt" &&
    grep -q "not given the device nodes of .*renderD130.*renderD131.*renderD132" "$WORK/check-none.txt" ||
    fail "image check does not name the GPUs the pod lacks: $(cat "$WORK/check-none.txt")"
rm -f "$WORK/img/restored.pid"
enter_devices_cgroup 130 131 132
if run_criu restore -D "$WORK/img" -v4 -o restore-none.log -d --pidfile "$WORK/img/restored.pid" \
    --manage-cgroups=ignore 2>"$WORK/restore-none.stderr"; then
    STARTED_PIDS+=("$(cat "$WORK/img/restored.pid")")
    fail "restored into a pod that was given no GPU"
fi
leave_devices_cgroup
grep -q "it was not given the device nodes of" "$WORK/img/restore-none.log" &&
    grep -q "$POD holds kfd" "$WORK/img/restore-none.log" ||
    fail "the failed restore does not say which device nodes the pod lacks (see $WORK/img/restore-none.log)"
"$TOOL" mock status --root "$ROOT" | grep -q "context " &&
    fail "the refused restore left a context: $("$TOOL" mock status --root "$ROOT")"

# The new pod was given another GPU: the restore maps onto it.
give 132
"$TOOL" image check "$WORK/img" --dev "$POD" >"$WORK/check-132.txt" 2>&1 ||
    fail "image check --dev with a GPU given: $(cat "$WORK/check-132.txt")"
# As runc restores a container, the restored /dev is the old pod's (renderD131, which the new
# pod's cgroup refuses), not the new pod's (renderD132): the restore asks the kernel, maps onto
# 132 and makes its node.
rm "$POD/dri/renderD132"
give 131
enter_devices_cgroup 130 131
criu_restore "$WORK/img" --manage-cgroups=ignore
leave_devices_cgroup
grep -q "not this process's GPU: GPU 0x[0-9a-f]*: $POD/dri/renderD131: open refused" "$WORK/img/restore.log" ||
    fail "the restore did not ask the kernel about the old pod's renderD131 (see $WORK/img/restore.log)"
[ "$(stat -c '%F %t:%T' "$POD/dri/renderD132" 2>/dev/null)" = "character special file e2:84" ] ||
    fail "the restore did not make the new pod's node renderD132 (226:132): $(ls -l "$POD/dri")"
grep -qE "GPU 0x[0-9a-f]+ -> 0x[0-9a-f]+" "$WORK/img/restore.log" || fail "no GPU mapping in the restore log"
STATUS=$("$TOOL" mock status --root "$ROOT")
GIVEN=$(echo "$STATUS" | awk '$1 == "GPU" && $5 == "renderD132" {print $2}')
[ -n "$GIVEN" ] || fail "no GPU with renderD132 in the status: $STATUS"
[ "$(echo "$STATUS" | grep -c '^context ')" = 1 ] && grep -q "^context .* GPU $GIVEN " <<<"$STATUS" ||
    fail "not restored onto the GPU the new pod was given ($GIVEN, renderD132): $STATUS"
wait_for_next_step "$WORK/out.txt" workload
finish_stopped "$ROOT" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] ||
    fail "checksum after the restore in the new pod $GOT, expected $EXPECTED (an uninterrupted run of $STOPPED_AFTER steps)"
note "device view: restored from renderD131 onto renderD132 ($(grep -oE 'GPU 0x[0-9a-f]+ -> 0x[0-9a-f]+' "$WORK/img/restore.log" | head -1)), checksum $GOT"
