#!/usr/bin/env bash
# A checkpoint is untrusted input (docs/security.md). The workload is dumped once; copies of its
# image directory are then crafted as a registry could serve them: a contents file replaced by a
# symbolic link to a host file of the same size (whose bytes would land in the restored BO), by a
# FIFO (which would hang the restore), and an image by a link climbing out of the directory.
# Real criu restores each: the plugin refuses it naming the file and what it is, in bounded time,
# the host file's bytes never restored. Then the untouched checkpoint restores and the workload ends
# with the checksum of an uninterrupted run: nothing was left half done.
source "$(dirname "$0")/lib.sh"
ROOT=$(make_machine machine --gpus 1)
export CRIU_AMDGPU_MOCK_ROOT=$ROOT
ARGS=(--gpus 1 --buffers 2 --size 65536 --steps 20)
EXPECTED=$(reference_checksum "$ROOT" "${ARGS[@]}")

start_workload "$WORK/out.txt" "$WORKLOAD" --root "$ROOT" "${ARGS[@]}" --step-ms 100
wait_for_line "$WORK/out.txt" "step 3/"
criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
wait_gone "$WPID" 10
PAGES=$(cd "$WORK/img" && ls amdgpu-drm-pages-* | head -1)
RENDER=$(cd "$WORK/img" && ls amdgpu-renderD-* | head -1)
[ -n "$PAGES" ] && [ -n "$RENDER" ] || fail "the dump wrote no render-node image or contents file"

# crafted NAME MUTATION...: a copy of the checkpoint, MUTATION run in it.
crafted() {
    local name=$1; shift
    cp -a "$WORK/img" "$WORK/$name"
    rm -f "$WORK/$name"/*.log "$WORK/$name/restored.pid"
    (cd "$WORK/$name" && "$@")
}
# refused NAME WHAT: criu restore of the crafted copy NAME fails within 60 s, its log naming the
# file and WHAT it is.
refused() { restore_refused "$WORK/$1" "$2"; }

SECRET="$WORK/host-secret"
head -c "$(stat -c %s "$WORK/img/$PAGES")" /dev/urandom >"$SECRET"
chmod 0400 "$SECRET"
crafted linked ln -sf "$SECRET" "$PAGES"
refused linked "$PAGES: it is a symbolic link"
crafted fifo sh -c "rm $PAGES && mkfifo $PAGES"
refused fifo "$PAGES: it is a FIFO"
crafted climbing sh -c "mv $RENDER ../moved-$RENDER && ln -s ../moved-$RENDER $RENDER"
refused climbing "$RENDER: it is a symbolic link"

"$TOOL" mock reset --root "$ROOT" >/dev/null
criu_restore "$WORK/img"
wait_for_line "$WORK/out.txt" "^checksum " 120
GOT=$(checksum_of "$WORK/out.txt")
[ "$GOT" = "$EXPECTED" ] || fail "checksum after restore $GOT, uninterrupted run $EXPECTED"
note "hostile restores refused; the untouched checkpoint restored: checksum $GOT"
