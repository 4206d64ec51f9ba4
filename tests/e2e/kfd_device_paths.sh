# The user-space KFD driver's devices at their /dev paths, for a scenario that runs CRIU's own
# amdgpu plugin under real criu (scenario_kfd_driver.sh's upstream variants, bench_vs_upstream.sh).
# Sourced first, before lib.sh: the scenario runs again, whole, in a private mount namespace of
# its own, whose /dev is a tmpfs copy of the host's (its nodes and symlinks copied, its mounts,
# /dev/shm and /dev/pts, bound again there) to which each machine the scenario starts adds
# /dev/kfd and /dev/dri/renderD<N>: block nodes of that machine's memory (its loop device).
#
# Why: CRIU's plugin knows a device mapping only by its path (amdgpu_plugin_update_vmamap maps
# /dev/kfd and /dev/dri/renderD*, and skips any other path), and criu records a mapping's path as
# the process opened it. The driver's files are nodes of its own (ROOT/files/ID/kfd), one per open
# file, named so that a request names its file; the interposer maps the device's /dev node at the
# same place of the same memory where it finds one (kfddriver::isMachineMemory), so the mappings are
# named /dev/kfd and /dev/dri/renderD<N> as on a ROCm machine, while the fds stay the driver's
# files. What else tells the devices apart is unchanged: CRIU's HANDLE_DEVICE_VMA compares st_rdev
# (the major of stat("/dev/kfd"), a render minor from 128), which criu's preloaded fstat of such a
# node answers as the driver's device (kfd::asMachineDevice); the driver tells processes apart by
# the peer of each connection (SO_PEERCRED), and files by their nodes' paths. A private namespace
# with its own /dev, rather than bind mounts over /dev/kfd and /dev/dri of the host's /dev: those
# paths do not exist on a machine without a GPU, and making them there would change the host's /dev
# for everyone. The workload, criu's dump, its restore and the restored process all run in the
# namespace, as on one machine with one /dev; a machine switched off and on again gets new nodes
# (its new loop device) at the same paths. The namespace ends with its last process; nothing of it
# reaches the host's /dev.
set -euo pipefail
# KFD_DEVICE_NAMESPACE: the mount namespace the scenario was started in, which the one it runs in
# must not be.
if [ -z "${KFD_DEVICE_NAMESPACE:-}" ]; then
    outer=$(readlink /proc/self/ns/mnt)
    [ -n "$outer" ] || { echo "FAIL: cannot read this shell's mount namespace" >&2; exit 1; }
    exec unshare --mount --propagation private env KFD_DEVICE_NAMESPACE="$outer" bash "$0" "$@"
fi

# own_mount_namespace: fails unless this shell is in another mount namespace than the one the
# scenario was started in (never trusting /proc/1, which a container may not show).
own_mount_namespace() {
    local here
    here=$(readlink /proc/self/ns/mnt)
    [[ "$KFD_DEVICE_NAMESPACE" == mnt:\[*\] ]] && [ -n "$here" ] && [ "$here" != "$KFD_DEVICE_NAMESPACE" ] ||
        { echo "FAIL: not in a mount namespace of its own (KFD_DEVICE_NAMESPACE=$KFD_DEVICE_NAMESPACE, here $here): the host's /dev is not touched" >&2; exit 1; }
}
# in_device_namespace: fails unless this shell is in a mount namespace of its own whose /dev is
# a tmpfs mounted there (never the host's /dev).
in_device_namespace() {
    own_mount_namespace
    [ "$(awk '$5 == "/dev" { t = $0 } END { sub(/.* - /, "", t); split(t, f, " "); print f[1] }' \
        /proc/self/mountinfo)" = tmpfs ] ||
        { echo "FAIL: /dev is not this namespace's tmpfs: the host's /dev is not touched" >&2; exit 1; }
}

# copy_dev: /dev becomes a tmpfs holding what the host's /dev holds.
copy_dev() {
    local saved entry copied=() mounts=()
    local -A mounted=()
    own_mount_namespace
    # The host's /dev/shm, /dev/pts and the like: mount points directly under /dev (mountinfo's
    # 5th field), bound again; everything else (nodes, symlinks, folders) copied in one go.
    mapfile -t mounts < <(awk '$5 ~ /^\/dev\/[^\/]+$/ { print substr($5, 6) }' /proc/self/mountinfo | sort -u)
    for entry in "${mounts[@]}"; do mounted[$entry]=1; done
    saved=$(mktemp -d "${TMPDIR:-/tmp}/criu-amdgpu-dev.XXXXXX")
    mount --rbind /dev "$saved"
    for entry in "$saved"/* "$saved"/.[!.]*; do
        [ -e "$entry" ] || [ -L "$entry" ] || continue
        [ -n "${mounted[${entry##*/}]:-}" ] || copied+=("$entry")
    done
    mount -t tmpfs -o mode=755,nosuid tmpfs /dev
    in_device_namespace # nothing is copied or made unless /dev is this namespace's tmpfs
    cp -a "${copied[@]}" /dev/
    for entry in "${mounts[@]}"; do
        mkdir -p "/dev/$entry"
        mount --rbind "$saved/$entry" "/dev/$entry"
    done
    umount -l "$saved"
    rmdir "$saved"
    mkdir -p -m 755 /dev/dri
}
copy_dev
in_device_namespace
DEVICE_PATHS=1 # kfd_driver_lib.sh: each machine started puts its devices at their /dev paths

# place_device_nodes ROOT: /dev/kfd and /dev/dri/renderD<N> of each render node the machine at
# ROOT lists, block nodes of its memory (ROOT/memory.node's device), in place of a former
# machine's.
place_device_nodes() {
    local root=$1 major minor node render
    in_device_namespace
    read -r major minor < <(stat -c '%t %T' "$root/memory.node")
    rm -f /dev/kfd /dev/dri/renderD*
    mknod -m 666 /dev/kfd b $((16#$major)) $((16#$minor))
    for node in "$root"/sysfs/nodes/*/properties; do
        render=$(awk '$1 == "drm_render_minor" {print $2}' "$node")
        [ -n "$render" ] && [ "$render" -gt 0 ] || continue
        mknod -m 666 "/dev/dri/renderD$render" b $((16#$major)) $((16#$minor))
    done
}
