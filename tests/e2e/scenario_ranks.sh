#!/usr/bin/env bash
# Scenario: multi-GPU training as torchrun runs it on one node, the shape of criu issues 2722
# (DDP/RCCL training fails after restore) and 2812 (parallel restore of a PyTorch job). A launcher
# and 4 ranks, one GPU each; every rank exports a communication buffer, imports every peer's
# (dma-buf fds over unix sockets, or pidfd_getfd), and all-reduces through them in lock step. The
# whole tree is dumped, the GPUs reset and the tree restored; then the restored tree is dumped
# again and restored onto a machine whose GPUs have other gpu_ids and render minors. The run ends
# with the checksum of an uninterrupted one, which it reaches only if the ranks share GPU memory
# again after each restore (the ranks take a step after the last restore, then stop together
# through --stop-file: their checksums are those of an uninterrupted run of as many steps); with
# criu 4.2+ the second restore is a parallel one. SHARE_BY (scm, pidfd) chooses how the ranks hand their buffers over.
source "$(dirname "$0")/lib.sh"
SRC=$(make_machine source --gpus 4)
# The uninterrupted run the stopped tree is compared with runs on a machine of its own, as new:
# the dumps, kills and resets of this one may leave contexts the mock reclaims under it
# ("the mock GPU device of fd 5 was reset" in a reference run of e2e.ranks_pidfd under ASan).
REF=$(make_machine reference --gpus 4)
DST=$(make_machine destination --gpus 4 --gpu-id-base 0x4000 --render-minor-base 150)
ARGS=(--ranks 4 --gpus 4 --size 262144 --share-by "${SHARE_BY:-scm}")

export CRIU_AMDGPU_MOCK_ROOT=$SRC
start_workload "$WORK/out.txt" "$WORKLOAD" --root "$SRC" "${ARGS[@]}" --step-ms 100 \
    --steps 100000 --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "rank 3: step 3/"
STATUS=$("$TOOL" mock status --root "$SRC")
[ "$(echo "$STATUS" | grep -c '^context ')" = 4 ] || fail "expected 4 open devices: $STATUS"
[ "$(echo "$STATUS" | grep -c '  imported  shared with')" = 12 ] ||
    fail "expected each of 4 ranks to import 3 peer buffers: $STATUS"

criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
# Contents once per memory: each rank's working buffer, and each shared buffer once.
[ "$(ls "$WORK/img" | grep -c '^amdgpu-drm-pages-')" = 8 ] ||
    fail "expected 8 pages files (4 working + 4 shared buffers): $(ls "$WORK/img" | grep amdgpu-)"
SHOW=$("$TOOL" image show "$WORK/img")
grep -q "follower of shared memory" <<<"$SHOW" || fail "image show does not show the sharing: $SHOW"
"$TOOL" image verify "$WORK/img" >/dev/null || fail "image verify: $("$TOOL" image verify "$WORK/img")"
"$TOOL" mock status --root "$SRC" | grep -q "no open devices" ||
    fail "the dumped ranks' devices were not released: $("$TOOL" mock status --root "$SRC")"

"$TOOL" mock reset --root "$SRC" >/dev/null
criu_restore "$WORK/img"
wait_for_line "$WORK/out.txt" "rank 3: step 12/" 60
STATUS=$("$TOOL" mock status --root "$SRC")
[ "$(echo "$STATUS" | grep -c '  shared with')" = 16 ] ||
    fail "after the restore the ranks do not share their 4 buffers 4 ways: $STATUS"

# The restored tree again, onto other GPUs.
RESTORED=$(cat "$WORK/img/restored.pid")
criu_dump "$WORK/img2" "$RESTORED" || fail "criu dump of the restored tree failed"
wait_gone "$RESTORED" 10
export CRIU_AMDGPU_MOCK_ROOT=$DST
# With criu 4.2+ this restore is a parallel one: each rank hands its BOs to criu's main process.
case "$CRIU_VERSION" in
    4.0* | 4.1*) parallel=0 ;;
    *) parallel=1 ;;
esac
CRIU_AMDGPU_PARALLEL_RESTORE=$parallel criu_restore "$WORK/img2"
if [ "$parallel" = 1 ]; then
    grep -q "parallel restore: 4 job(s) done" "$WORK/img2/restore.log" ||
        fail "the parallel restore did not run one job per rank: $(grep 'parallel restore' "$WORK/img2/restore.log")"
fi
grep -qE "GPU 0x1000 -> 0x4[0-9a-f]{3}" "$WORK/img2/restore.log" ||
    fail "no remapping of GPU 0x1000 in the restore log"
STATUS=$("$TOOL" mock status --root "$DST")
[ "$(echo "$STATUS" | grep -cE '^context .* GPU 0x4[0-9a-f]{3} \(seen as 0x1[0-9a-f]{3}\)')" = 4 ] ||
    fail "expected the 4 ranks on the destination's GPUs: $STATUS"
wait_for_next_step "$WORK/out.txt" "rank 3"
finish_stopped "$REF" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksums after two restores $GOT, uninterrupted run $EXPECTED"
note "4 ranks sharing GPU memory (${SHARE_BY:-scm}): dumped, reset, restored, dumped, restored onto other GPUs, stopped after ($STOPPED_AFTER): checksums $GOT"
