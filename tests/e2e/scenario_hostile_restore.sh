#!/usr/bin/env bash
# A checkpoint is untrusted input (docs/security.md). The workload is dumped once; copies of its
# image directory are then crafted as a registry could serve them: a contents file replaced by a
# symbolic link to a host file of the same size (whose bytes would land in the restored BO), by a
# FIFO (which would hang the restore) or by a device node (/dev/zero's), an image by a link
# climbing out of the directory, and the chunk record's parent (e2e-chain-craft) made a loop, a
# chain deeper than the budget, an absolute path or one climbing out of the directory's parent,
# both naming a FIFO outside (opened, it would hang the restore).
# Real criu restores each: the plugin refuses it naming the file and what it is, in bounded time,
# the host file's bytes never restored, the process not restored, nothing left on the mock GPU and
# nothing made beside the crafted directory. Then the untouched checkpoint restores and the
# workload ends with the checksum of an uninterrupted run: nothing was left half done.
# The workload steps until the scenario is done with it (--stop-file: a fixed number of steps could
# end before criu froze it under load); the restored one stops when the scenario says so.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 1)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 1 --buffers 2 --size 65536)

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100 --steps 100000 \
    --stop-file "$WORK/stop"
wait_for_line "$WORK/out.txt" "step 3/"
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
PAGES=$(cd "$WORK/img" && ls amdgpu-drm-pages-* | head -1)
RENDER=$(cd "$WORK/img" && ls amdgpu-renderD-* | head -1)
RECORD=$(cd "$WORK/img" && ls amdgpu-chunks-* | head -1)
[ -n "$PAGES" ] && [ -n "$RENDER" ] || fail "the dump wrote no render-node image or contents file"
[ -n "$RECORD" ] || fail "the dump wrote no chunk record"
CRAFT="$BUILD_DIR/tests/e2e/e2e-chain-craft"

# crafted NAME MUTATION...: a copy of the checkpoint, MUTATION run in it.
crafted() { craft_copy "$WORK/img" "$@"; }
# refused NAME WHAT: criu restore of the crafted copy NAME fails within 60 s, its log naming the
# file and WHAT it is (tests/e2e/lib.sh: no process restored, nothing left on the GPU or beside it).
refused() { restore_refused "$WORK/$1" "$2"; }

SECRET="$WORK/host-secret"
head -c "$(stat -c %s "$WORK/img/$PAGES")" /dev/urandom >"$SECRET"
chmod 0400 "$SECRET"
crafted linked ln -sf "$SECRET" "$PAGES"
refused linked "$PAGES: it is a symbolic link"
crafted fifo sh -c "rm $PAGES && mkfifo $PAGES"
refused fifo "$PAGES: it is a FIFO"
crafted device sh -c "rm $PAGES && mknod $PAGES c 1 5"
refused device "$PAGES: it is a character device"
crafted climbing sh -c "mv $RENDER ../moved-$RENDER && ln -s ../moved-$RENDER $RENDER"
refused climbing "$RENDER: it is a symbolic link"

# The chain: a record whose parent names itself (a loop), ...
mkdir "$WORK/loop-parent" && cp "$WORK/img/$RECORD" "$WORK/loop-parent/"
"$CRAFT" "$WORK/loop-parent/$RECORD" "$RECORD"
crafted loop "$CRAFT" "$RECORD" "../loop-parent/$RECORD" "../loop-parent/$RECORD"
refused loop "its parent ../loop-parent/$RECORD is already in its chain (a loop)"
# ... a chain of 66 records, each sound, deeper than the 64 a restore follows
# (kMaxChainDepth, formats/image_chain.h), ...
mkdir "$WORK/deep-0" && cp "$WORK/img/$RECORD" "$WORK/deep-0/"
for i in $(seq 1 64); do
    mkdir "$WORK/deep-$i" && cp "$WORK/img/$RECORD" "$WORK/deep-$i/"
    "$CRAFT" "$WORK/deep-$i/$RECORD" "../deep-$((i - 1))/$RECORD" "$WORK/deep-$((i - 1))/$RECORD"
done
crafted deep "$CRAFT" "$RECORD" "../deep-64/$RECORD" "../deep-64/$RECORD"
refused deep "$RECORD: a chain deeper than 64 images"
# ... and parents outside: a FIFO named by an absolute path and by one climbing out of the
# directory's parent. Neither is opened: that would hang the restore.
mkfifo "$WORK/outside.fifo"
crafted absolute "$CRAFT" "$RECORD" "$WORK/outside.fifo"
refused absolute "its parent $WORK/outside.fifo: an absolute path"
mkdir "$WORK/nest"
crafted nest/climbing-parent "$CRAFT" "$RECORD" "../../outside.fifo"
refused nest/climbing-parent "its parent ../../outside.fifo: a path that climbs out of the image directory's parent"

"$TOOL" mock reset --root "$ROOT" >/dev/null
criu_restore "$WORK/img"
finish_stopped "$ROOT" "$WORK/out.txt" "${ARGS[@]}"
[ "$GOT" = "$EXPECTED" ] || fail "checksum after restore $GOT, uninterrupted run $EXPECTED"
note "hostile restores refused; the untouched checkpoint restored: checksum $GOT"
