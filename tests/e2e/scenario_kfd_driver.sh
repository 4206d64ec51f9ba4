#!/usr/bin/env bash
# The KFD path under real criu (issue 50): kfd-driver-workload, an unmodified program on Debian's
# libhsakmt (AMD's thunk), runs on the user-space KFD driver (tests/kfd/DRIVER.md) with VRAM,
# GTT and userptr buffers, an AQL and an SDMA queue and a signal event; criu dumps it at a known
# step with our plugin on the kfd backend (option kfd-driver), the machine is reset (its driver
# ended, a new one started on an empty root: nothing of the old memory, queues or files is left),
# optionally with other gpu_ids (RESTORE_GPU_ID_BASE), and criu restores it as a new process. The
# driver must then hold the restored queues on the workload's rings on the new GPU and its
# signaled event; the workload carries on, checking every byte of its buffers at each step and
# ringing its doorbells, which the driver must find in each restored queue's doorbell; it
# allocates more, waits on its event, frees everything through the thunk's old handles, and
# prints the checksum of an uninterrupted run.
# KFD_VARIANT picks how criu dumps and restores (the matrix of DRIVER.md's slice 5):
#   plain        criu's images directory, contents in CRIU's pages files (the default);
#   encrypted    content-compression zstd and content-encryption aes-256-gcm: a sealed file of ours
#                per BO, restored only with the private key (a restore without it is refused);
#   parallel     parallel-restore: criu's main process restores the BO contents (criu 4.2+);
#   incremental  a --leave-running dump with lz4 at step 2, then one against it (parent-images) at
#                step 3, every byte rewritten in between: restored from the second, whose
#                contents files are compressed deltas;
#   stream       criu's image streamer (--stream, tests/e2e's e2e-image-streamer);
# and with CRIU's own amdgpu plugin (UPSTREAM_PLUGIN: the .so upstream_plugin.prepare builds,
# unmodified, from Debian's criu source), which criu loads alone from a folder of its own, its
# libc and libdrm_amdgpu calls reaching the driver through libkfd_driver_criu_preload.so
# preloaded into criu (tests/kfd/driver/criu_preload.cpp):
#   upstream           upstream dumps and restores;
#   upstream_to_ours   upstream dumps, ours restores;
#   ours_to_upstream   ours dumps (plain: pages files, no encryption, the default), upstream
#                      restores;
#   upstream_short_pages  the driver fails the first SDMA fence wait of the dump (ROOT/faults
#                      "waitFence EIO"): criu 4.1.1's sdma_copy_bo returns what its clean-up returns,
#                      not the failed copy's error, so upstream's dump reports success with a
#                      short pages image; ours refuses to restore it, naming the image.
# Every restored process is checked as the first variants' are (check_restored, finish_restored).
# The variants with CRIU's plugin run in a private mount namespace of their own
# (kfd_device_paths.sh) whose /dev holds the driver's devices at /dev/kfd and /dev/dri/renderD<N>,
# block nodes of the machine's memory that the interposer maps through: CRIU's plugin moves a device
# mapping at restore only when criu recorded it as one of those paths (amdgpu_plugin_update_vmamap
# skips any other, and criu then opens the recorded file itself), and criu records the path the
# process mapped. Chosen over bind mounts onto the host's /dev/kfd and /dev/dri (absent on a machine
# without a GPU, and made there they would be everyone's) and over renaming the driver's per-file
# nodes (their paths tell the driver's files apart). Every criu in the namespace, ours too, is
# preloaded with the driver's criu preload so that criu sees /dev/kfd as the same device at dump and
# restore.
# What CRIU's plugin does wrong on the restore of this process: nothing the restored process or the
# driver can tell; its log carries an "Error ... amdgpu-kfd-ID.img: Failed to open for read" for
# every render-node file of a successful restore (amdgpu_plugin_restore_file opens each file's id as
# a KFD image first and takes a failure to open it for a render node).
case "${KFD_VARIANT:-plain}" in
    upstream | upstream_to_ours | ours_to_upstream | upstream_short_pages) source "$(dirname "$0")/kfd_device_paths.sh" ;;
esac
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
VARIANT=${KFD_VARIANT:-plain}
case "$VARIANT" in
    plain | encrypted | parallel | incremental | stream) ;;
    upstream | upstream_to_ours | ours_to_upstream | upstream_short_pages)
        [ -f "${UPSTREAM_PLUGIN:-}" ] ||
            fail "UPSTREAM_PLUGIN=${UPSTREAM_PLUGIN:-}: no upstream plugin (upstream_plugin.prepare builds it)"
        ;;
    *) fail "KFD_VARIANT=$VARIANT: not one of plain, encrypted, parallel, incremental, stream, upstream, upstream_to_ours, ours_to_upstream, upstream_short_pages" ;;
esac

# start_streamer MODE: the image streamer on $WORK/img, storing in $WORK/store, until it listens.
start_streamer() {
    "$BUILD_DIR/tests/e2e/e2e-image-streamer" "$1" "$WORK/img" "$WORK/store" \
        >"$WORK/streamer-$1.out" 2>"$WORK/streamer-$1.log" &
    STREAMER_PID=$!
    STARTED_PIDS+=("$STREAMER_PID")
    wait_for_line "$WORK/streamer-$1.out" "^ready" 10
}
# images: the names of the images of the dump restored from (the streamer's store when streamed).
images() { if [ "$VARIANT" = stream ]; then ls "$WORK/store"; else ls "$WORK/img"; fi; }
upstream_dumps() { [ "$VARIANT" = upstream ] || [ "$VARIANT" = upstream_to_ours ] || [ "$VARIANT" = upstream_short_pages ]; }

start_driver
reference_run

rm -f "$WORK/go-first"
# incremental: the first dump at a gate after step 2; the workload rewrites every byte at step 3.
first_gate=()
[ "$VARIANT" != incremental ] || first_gate=(--wait-at 2 --go-file "$WORK/go-first")
start_gated_workload "${first_gate[@]}"
if [ "$VARIANT" = incremental ]; then
    wait_for_line "$WORK/out.txt" "^waiting for $WORK/go-first" 20
    CRIU_AMDGPU_CONTENT_COMPRESSION=lz4 criu_dump "$WORK/first" "$WPID" --link-remap --leave-running ||
        fail "the first dump (lz4, --leave-running) at step 2 failed"
    claimed "$WORK/first/dump.log"
    kill -0 "$WPID" 2>/dev/null || fail "the workload did not keep running after --leave-running"
    ls "$WORK/first" | grep -q '^amdgpu-packed-kfd-bo-' || fail "the lz4 dump wrote no packed BO file"
    touch "$WORK/go-first"
fi
wait_for_line "$WORK/out.txt" "^waiting for $WORK/go$" 20
USERPTR_DUMPED=$(userptr_digest "$WPID")
OLD_GPU=$(query "$WPID" | awk '$1 == "queue" {print $3; exit}')
case "$VARIANT" in
    encrypted)
        make_content_keys
        LD_DEBUG=files LD_DEBUG_OUTPUT="$WORK/ld-dump" encrypted_dump "$WORK/img" "$WPID" \
            --link-remap || fail "criu dump (zstd, aes-256-gcm) failed"
        expect_libcrypto yes dump
        ;;
    plain)
        # OpenSSL's libcrypto is loaded only to encrypt, sign or verify: not by this dump.
        LD_DEBUG=files LD_DEBUG_OUTPUT="$WORK/ld-dump" criu_dump "$WORK/img" "$WPID" --link-remap ||
            fail "criu dump failed"
        expect_libcrypto no dump
        ;;
    incremental)
        CRIU_AMDGPU_CONTENT_COMPRESSION=lz4 CRIU_AMDGPU_PARENT_IMAGES=../first \
            criu_dump "$WORK/img" "$WPID" --link-remap || fail "the dump against the first failed"
        ;;
    stream)
        mkdir -p "$WORK/img" "$WORK/store"
        start_streamer capture
        criu_dump "$WORK/img" "$WPID" --link-remap --stream || fail "criu dump --stream failed"
        wait "$STREAMER_PID" || fail "the streamer saw a broken protocol: $(cat "$WORK/streamer-capture.log")"
        ls "$WORK/img" | grep -q '^amdgpu-' && fail "an amdgpu image went to the directory, not the streamer"
        ;;
    upstream | upstream_to_ours | upstream_short_pages)
        mkdir -p "$WORK/img"
        # The first SDMA fence wait of the dump fails (ROOT/faults, read by the driver at its next call).
        [ "$VARIANT" != upstream_short_pages ] || echo "waitFence EIO" >"$ROOT/faults"
        upstream_criu dump -t "$WPID" -D "$WORK/img" -v4 -o dump.log --link-remap \
            2>"$WORK/img/criu-stderr.log" || fail "criu dump with CRIU's plugin failed"
        ;;
    *) criu_dump "$WORK/img" "$WPID" --link-remap || fail "criu dump failed" ;;
esac
wait_gone "$WPID" 10
if upstream_dumps; then upstream_claimed "$WORK/img/dump.log"; else claimed "$WORK/img/dump.log"; fi
images | grep -q '^amdgpu-kfd-[0-9]*\.img$' || fail "no KFD image written"
# Where the BO contents went: CRIU's pages files of a plain dump; a file of ours per BO, sealed
# or compressed, never CRIU's pages files otherwise; compressed deltas against the parent when
# incremental.
case "$VARIANT" in
    encrypted) contents='^amdgpu-packed-kfd-bo-' ;;
    incremental) contents='^amdgpu-packed-delta-kfd-bo-' ;;
    *) contents='^amdgpu-pages-' ;;
esac
images | grep -q "$contents" || fail "no contents file matching $contents: $(images | grep '^amdgpu-' | tr '\n' ' ')"
if [ "$VARIANT" = encrypted ] || [ "$VARIANT" = incremental ]; then
    images | grep -q '^amdgpu-pages-' && fail "$VARIANT: contents under CRIU's own pages files"
fi

end_driver
if [ -n "${RESTORE_GPU_ID_BASE:-}" ]; then start_driver --gpu-id-base "$RESTORE_GPU_ID_BASE"; else start_driver; fi
case "$VARIANT" in
    encrypted)
        restore_refused_without_key "$WORK/img" --link-remap
        CRIU_AMDGPU_CONTENT_PRIVATE_KEY=$KEYS/checkpoint.key criu_restore "$WORK/img" --link-remap
        ;;
    parallel) CRIU_AMDGPU_PARALLEL_RESTORE=1 criu_restore "$WORK/img" --link-remap ;;
    stream)
        start_streamer serve
        criu_restore "$WORK/img" --link-remap --stream
        wait "$STREAMER_PID" || fail "the streamer saw a broken protocol: $(cat "$WORK/streamer-serve.log")"
        grep -q "never asked for: amdgpu-" "$WORK/streamer-serve.log" &&
            fail "amdgpu images were never read: $(grep 'never asked' "$WORK/streamer-serve.log")"
        ;;
    upstream_short_pages)
        # The dump said it succeeded; its pages image holds less than its header announces.
        pages=$(ls "$WORK/img"/amdgpu-pages-*.img | head -1)
        announced=$(od -An -tu8 -N8 "$pages" | tr -d ' ')
        [ $(($(stat -c %s "$pages") - 8)) -lt "$announced" ] ||
            fail "CRIU's plugin wrote every byte of $pages though the driver failed its fence wait"
        rc=0
        timeout 60 "$CRIU" restore -D "$WORK/img" -L "$PLUGIN_DIR" -v4 -o restore.log -d \
            --pidfile "$WORK/img/restored.pid" --link-remap 2>/dev/null || rc=$?
        [ "$rc" -ne 124 ] || fail "criu restore hung on a short pages image"
        [ "$rc" -ne 0 ] || fail "ours restored a checkpoint whose pages image CRIU's plugin left short"
        [ ! -s "$WORK/img/restored.pid" ] || fail "a refused restore left a process"
        grep -a "amdgpu" "$WORK/img/restore.log" | grep -a "Error" | grep -q "$(basename "$pages")" ||
            fail "our refusal does not name $(basename "$pages"): $(grep -a 'Error' "$WORK/img/restore.log" | tail -3)"
        end_driver
        note "kfd driver ($VARIANT): CRIU's plugin reported a dump whose fence wait failed as a success, $(basename "$pages") $(($(stat -c %s "$pages") - 8)) of $announced bytes; ours refused it naming the image"
        exit 0
        ;;
    upstream | ours_to_upstream)
        rm -f "$WORK/img/restored.pid"
        upstream_criu restore -D "$WORK/img" -v4 -o restore.log -d --pidfile "$WORK/img/restored.pid" \
            --link-remap 2>"$WORK/img/criu-restore-stderr.log" ||
            fail "criu restore with CRIU's plugin failed (see $WORK/img/restore.log)"
        upstream_restored "$WORK/img/restore.log"
        RPID=$(cat "$WORK/img/restored.pid")
        STARTED_PIDS+=("$RPID")
        ;;
    plain)
        LD_DEBUG=files LD_DEBUG_OUTPUT="$WORK/ld-restore" criu_restore "$WORK/img" --link-remap
        expect_libcrypto no restore
        ;;
    *) criu_restore "$WORK/img" --link-remap ;;
esac
if [ "$VARIANT" = parallel ]; then
    log=$WORK/img/restore.log
    grep -q "parallel restore: the restored tasks hand BO contents to criu's main" "$log" ||
        fail "parallel restore was not set up: $(grep -a 'parallel' "$log" | tail -3)"
    grep -qE "kfd: BO contents of amdgpu-kfd-[0-9]+\.img \(1 GPUs\) handed to criu's main process" "$log" ||
        fail "the restored task did not hand its BO contents to criu's main process"
    grep -q "parallel restore: 1 job(s) done" "$log" || fail "criu's main process did not run the job"
fi
want_gpu=$(printf '0x%x' "${RESTORE_GPU_ID_BASE:-$OLD_GPU}")
check_restored "$want_gpu"
finish_restored "$want_gpu"
end_driver
note "kfd driver ($VARIANT): dumped at step 3 on GPU $OLD_GPU, restored onto GPU $want_gpu, every byte checked to step $STEPS, doorbells $COMPUTE/$SDMA in the restored queues, checksum $GOT"
