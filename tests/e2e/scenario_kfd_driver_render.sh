#!/usr/bin/env bash
# A render-node-only process under real criu (issue 51, item 4), on the amdgpu-drm backend.
# kfd-driver-render-client runs what Mesa runs on Debian's unmodified libdrm_amdgpu, preloaded
# with the user-space driver's interposer, on a machine of render nodes only (kfd-driver
# --no-kfd: no /dev/kfd, as a kernel or container without KFD): device init, a GTT BO and a VRAM
# BO the CPU maps, each with known bytes, a VRAM BO made as Mesa makes its images
# (VM_ALWAYS_VALID | NO_CPU_ACCESS) filled by an SDMA copy through amdgpu_cs_submit_raw2 that
# signals a syncobj, a copy back through amdgpu_cs_submit with a BO list, a GPU context and a
# syncobj that are the second of each (the first freed), and an exportable VRAM BO the CPU may
# not map (NO_CPU_ACCESS without VM_ALWAYS_VALID) filled by an SDMA copy, whose contents the
# backend moves through its dma-buf on the driver's SDMA engine. criu 4.3 dumps it with our plugin, whose
# probe chooses the amdgpu-drm backend (option kfd-driver: the backend reaches the driver's
# render nodes through its KernelInterface), and the process is gone; the machine is reset (a new
# driver on an empty root), and criu restores it as a new process. It then finds every byte of
# its CPU-mapped BOs, its old context (QUERY_STATE2 of its id) and its old syncobj (signaled)
# by their numbers, and submits SDMA copies of the Mesa-made and the hidden VRAM BOs on them, which
# signal the syncobj and bring every byte back; a syncobj it makes then gets number 1, freed before the dump
# (the restore's filler there is gone), and it ends.
#
# What this proves: the amdgpu-drm backend's dump and restore, under criu 4.3's hooks, of a
# process libdrm_amdgpu made (its GEM handles, VA mappings, CPU mappings restored by criu's
# restorer at the offsets the backend answers, contents of GTT, visible VRAM and Mesa's VRAM BOs,
# contexts and syncobjs at their numbers with the kernel's lowest-free rules as the fake render
# node keeps them), and that libdrm_amdgpu's state in the restored memory works against them.
# What only hardware can show: the kernel's own answers (the fake's ioctls are written after
# amdgpu_ctx.c, drm_syncobj.c and amdgpu_gem.c, not run from them), real GPU VM faults and
# residency, SDMA engines other than the COPY_LINEAR packets the driver executes, the kernel's
# dma-bufs, and Mesa itself. A BO shared with a second process through a dma-buf (PRIME, which
# the driver serves) is the sibling scenario_kfd_driver_render_prime.sh
# (e2e.kfd_driver_render_prime.criu-4.3), sharing this one's libraries.
# RENDER_VARIANT picks the matrix's cell (each a machine of render nodes only):
#   plain       dumped on renderD128 of one GPU, restored on renderD128 of a new machine;
#   other_gpus  dumped on renderD129, the second GPU of two, restored on a machine of four GPUs
#               whose renderD128 and renderD129 are not there: onto renderD130 or renderD131;
#   subset      a container given renderD129 of two GPUs (kfd-driver --hide-render 128); a
#               restore into one given neither is refused before any render node of the process
#               is opened, naming renderD129 (and that /dev/dri has none), and leaves no process;
#               one given only renderD128 restores onto it (without KFD sysfs the backend tells
#               GPUs apart by model, PCI location and VRAM, and the driver's render nodes show
#               the same synthetic gpu_id: renderD128 is a GPU like the one dumped);
#   dump_faults two dumps first, each with one render-node ioctl of the driver failing once
#               (ROOT/faults "drm:NAME ERRNO"): the context search (AMDGPU_CTX QUERY_STATE2) and
#               the wait for the SDMA copy of the Mesa-made BO (AMDGPU_WAIT_CS). Each
#               fails naming its step and call; the process runs on unpaused, traced by nobody;
#               then a --leave-running dump finds its file as it was (6 BOs, 1 context, 1
#               syncobj: the failed dumps' SDMA sessions left nothing in it), and the process
#               goes on from its gate as a restored one would (every byte, its context, its
#               syncobj, an SDMA copy on them);
#   encrypted   content-compression zstd and content-encryption aes-256-gcm to a certificate: a
#               sealed file of ours per BO, no CRIU pages file of a BO; a restore without the
#               private key is refused naming the option, one with it restores.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/kfd_driver_lib.sh"
CLIENT=$DRIVER_DIR/kfd-driver-render-client
VARIANT=${RENDER_VARIANT:-plain}
# The dumped machine and render node, the restored machine and the render node(s) it must get.
DUMP_MACHINE=(--no-kfd) MINOR=128 RESTORE_MACHINE=(--no-kfd) WANT='renderD128'
case "$VARIANT" in
    plain | encrypted | dump_faults) ;;
    other_gpus)
        DUMP_MACHINE=(--no-kfd --gpus 2) MINOR=129 WANT='renderD13[01]'
        RESTORE_MACHINE=(--no-kfd --gpus 4 --hide-render 128 --hide-render 129)
        ;;
    subset)
        DUMP_MACHINE=(--no-kfd --gpus 2 --hide-render 128) MINOR=129 WANT='renderD128'
        RESTORE_MACHINE=(--no-kfd --gpus 2 --hide-render 129)
        ;;
    *) fail "RENDER_VARIANT=$VARIANT: not one of plain, other_gpus, subset, dump_faults, encrypted" ;;
esac
NODE=/dev/dri/renderD$MINOR

start_driver "${DUMP_MACHINE[@]}"
rm -f "$WORK/go"
start_workload "$WORK/out.txt" env LD_PRELOAD="$PRELOAD" "$CLIENT" "$NODE" --go-file "$WORK/go"
wait_for_line "$WORK/out.txt" "^waiting for $WORK/go$" 20
grep -qx "syncobj 2" "$WORK/out.txt" || fail "the workload's syncobj is not number 2: $(cat "$WORK/out.txt")"

if [ "$VARIANT" = dump_faults ]; then
    # FAULT (as ROOT/faults takes it) and what the plugin's error must say.
    FAULTS=(
        "drm:CTX EIO|\(amdgpu-drm backend, checkpoint\): while collecting GPU objects of process $WPID: .*renderD$MINOR\): AMDGPU_CTX QUERY_STATE2 of context 1 failed \(Input/output error\)"
        "drm:WAIT_CS ETIME|\(amdgpu-drm backend, dump file\): .* by SDMA on its own file\) of renderD$MINOR .*: AMDGPU_WAIT_CS of SDMA copy [0-9]+ on context [0-9]+ failed \(Timer expired\)"
    )
    after_failed_dump() {
        grep -q "amdgpu-drm: process $WPID unpaused after a failed dump" "$2/dump.log" ||
            fail "$1: the process was not unpaused"
    }
    dumps_failed_by_faults "$WORK/fault"
fi
if [ "$VARIANT" = encrypted ]; then
    make_content_keys
    encrypted_dump "$WORK/img" "$WPID" || fail "criu dump (zstd, aes-256-gcm) failed"
elif [ "$VARIANT" = dump_faults ]; then
    criu_dump "$WORK/img" "$WPID" --leave-running || fail "criu dump --leave-running after the faults failed"
else
    criu_dump "$WORK/img" "$WPID" || fail "criu dump failed"
fi
[ "$VARIANT" = dump_faults ] || wait_gone "$WPID" 10
log=$WORK/img/dump.log
require_core "$log"
grep -q "using backend amdgpu-drm (amdgpu render node /dev/dri/renderD[0-9]* answers GEM_LIST_HANDLES)" "$log" ||
    fail "the probe did not choose amdgpu-drm: $(grep -a 'backend' "$log" | tail -5)"
grep -q "kfd: file .* claimed" "$log" && fail "the kfd backend claimed a file of a render-node-only process"
grep -qE "amdgpu-drm: process [0-9]+ $ROOT/files/[0-9]+/renderD$MINOR: 6 BOs, 1 contexts, 1 syncobjs" "$log" ||
    fail "the dump did not find the process's 6 BOs, context and syncobj: $(grep -a 'amdgpu-drm: process' "$log")"
ls "$WORK/img" | grep -q '^amdgpu-renderD-[0-9]*\.img$' || fail "no render-node image written"
# Where the BO contents went: sealed files of ours when encrypted, CRIU's pages files otherwise.
if [ "$VARIANT" = encrypted ]; then
    ls "$WORK/img" | grep -q '^amdgpu-packed-' || fail "no sealed contents file: $(ls "$WORK/img" | grep '^amdgpu-' | tr '\n' ' ')"
    ls "$WORK/img" | grep -q '^amdgpu-drm-pages-' && fail "encrypted: BO contents under CRIU's own pages files"
fi

if [ "$VARIANT" = dump_faults ]; then
    RPID=$WPID ONTO=$NODE # the same process goes on, on its own render node
else
    # The machine is switched off: nothing of the old files, BOs, contexts or syncobjs is left.
    end_driver
    if [ "$VARIANT" = subset ]; then
        # A container given neither render node of the two.
        start_driver --no-kfd --gpus 2 --hide-render 128 --hide-render 129
        rm -f "$WORK/img/refused.pid"
        if run_criu restore -D "$WORK/img" -v4 -o refused.log -d --pidfile "$WORK/img/refused.pid" 2>/dev/null; then
            STARTED_PIDS+=("$(cat "$WORK/img/refused.pid")")
            fail "restored into a container that was given no render node"
        fi
        [ ! -s "$WORK/img/refused.pid" ] || fail "the refused restore left a process"
        grep -qE "file id [0-9]+ was an AMD GPU device \(renderD129 of GPU 0x[0-9a-f]+\), and no backend can serve it here: .*amdgpu-drm: no render node under /dev/dri" "$WORK/img/refused.log" ||
            fail "the refused restore does not name renderD129 and the missing render nodes: $(grep -a 'Error (amdgpu)' "$WORK/img/refused.log")"
        grep -q "amdgpu-drm: file id" "$WORK/img/refused.log" &&
            fail "the refused restore opened a render node of the process: $(grep -a 'amdgpu-drm: file id' "$WORK/img/refused.log")"
        end_driver
    fi
    start_driver "${RESTORE_MACHINE[@]}"
    if [ "$VARIANT" = encrypted ]; then
        restore_refused_without_key "$WORK/img"
        CRIU_AMDGPU_CONTENT_PRIVATE_KEY=$KEYS/checkpoint.key criu_restore "$WORK/img"
    else
        criu_restore "$WORK/img"
    fi
    grep -q "using backend amdgpu-drm" "$WORK/img/restore.log" || fail "the restore did not use amdgpu-drm"
    restored=$(grep -aoE "amdgpu-drm: file id [0-9]+: renderD$MINOR -> /dev/dri/renderD[0-9]+, 6 BOs, 1 contexts, 1 syncobjs" "$WORK/img/restore.log") ||
        fail "the restore did not recreate the file's 6 BOs, context and syncobj: $(grep -a 'amdgpu-drm: file id' "$WORK/img/restore.log")"
    ONTO=${restored##*-> } ONTO=${ONTO%%,*}
    [[ "$ONTO" == /dev/dri/$WANT ]] || fail "renderD$MINOR was not restored onto $WANT but $ONTO"
fi
touch "$WORK/go"
wait_gone "$RPID" 20
for line in "going on" "gtt 262144 of 262144 bytes" "visible vram 262144 bytes" \
    "context flags 0x0" "syncobj 2 signaled" "after restore seq [0-9]+ copy 262144 of 262144 bytes" \
    "hidden vram 262144 of 262144 bytes" "new syncobj 1" "ok"; do
    grep -qE "^$line\$" "$WORK/out.txt" || fail "the restored process did not print \"$line\": $(tail -3 "$WORK/out.txt")"
done
end_driver
if [ "$VARIANT" = dump_faults ]; then
    note "kfd driver render node (dump_faults): $n dumps of a libdrm_amdgpu process each failed by one render-node ioctl, named in criu's log; it ran on unpaused, a --leave-running dump found its 6 BOs, context and syncobj unchanged, and it checked every byte and submitted an SDMA copy on its context and syncobj"
else
    note "kfd driver render node ($VARIANT): a libdrm_amdgpu process of 6 BOs, context 2 and syncobj 2 dumped on amdgpu-drm by criu $CRIU_VERSION, restored as a new process on a new machine ($ONTO), every byte checked and an SDMA copy submitted on its old context and syncobj"
fi
