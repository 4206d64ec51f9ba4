#!/usr/bin/env bash
# radv_test.sh DRIVER PRELOAD CLIENT: Mesa's RADV (Debian's mesa-vulkan-drivers, unmodified) on the
# user-space driver's render node (ctest kfd_driver.radv, label kfd). A driver of render nodes only
# (kfd-driver --no-kfd) serves the machine; kfd-driver-radv-client runs preloaded with the
# driver's interposer in a mount namespace whose /dev holds renderD128 as a character node
# 226:128 (libdrm's drmGetDevices2 enumerates render nodes by their /dev entries and their
# /sys/dev/char links, which the interposer routes to the driver). Checked: RADV names the GPU,
# host-visible memory is written and read back, a submission signals its fence and
# vkWaitForFences returns VK_SUCCESS, a semaphore is signaled and waited for, and the fence
# exported as a sync file is a real fd that polls readable and whose SYNC_IOC_FILE_INFO says one
# signaled fence; the driver made that sync file (a node ROOT/files/ID/sync_file). About a second.
set -euo pipefail
driver=$1 preload=$2 client=$3
icd=/usr/share/vulkan/icd.d/radeon_icd.x86_64.json
[ -e "$icd" ] || { echo "FAIL: no RADV ($icd): scripts/install-deps.sh installs mesa-vulkan-drivers"; exit 1; }
work=$(mktemp -d /tmp/kfd-driver-radv.XXXXXX)
driver_pid=
cleanup() {
  if [ -n "$driver_pid" ]; then
    kill "$driver_pid" 2>/dev/null || true
    wait "$driver_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
start=$(date +%s%N)
root=$work/root
mkdir "$root"
"$driver" "$root" --no-kfd >"$work/driver.out" 2>&1 &
driver_pid=$!
for _ in $(seq 100); do
  grep -q '^ready' "$work/driver.out" && break
  kill -0 "$driver_pid" 2>/dev/null || { cat "$work/driver.out"; echo "FAIL: the driver ended"; exit 1; }
  sleep 0.05
done
grep -q '^ready' "$work/driver.out" || { echo "FAIL: the driver did not start"; exit 1; }

status=0
unshare -m bash -euc '
  mount -t tmpfs -o mode=755 none /dev
  mknod -m 666 /dev/null c 1 3
  mknod -m 666 /dev/zero c 1 5
  mknod -m 666 /dev/urandom c 1 9
  mkdir /dev/dri
  mknod -m 666 /dev/dri/renderD128 c 226 128
  CRIU_AMDGPU_KFD_DRIVER=$1 CRIU_AMDGPU_KFD_SYSFS_ROOT=$1/sysfs VK_ICD_FILENAMES=$2 \
    MESA_SHADER_CACHE_DISABLE=true LD_PRELOAD=$3 timeout 30 "$4"
' radv "$root" "$icd" "$preload" "$client" >"$work/client.out" 2>&1 || status=$?
cat "$work/client.out"
echo "client exit $status, $(( ($(date +%s%N) - start) / 1000000 )) ms with the driver's start"

fail=0
expect() {
  grep -qxE -- "$1" "$work/client.out" || { echo "FAIL: no line '$1' ($2)"; fail=1; }
}
expect 'device AMD Radeon Graphics \(RADV [A-Z0-9_]+\)' "RADV did not name the driver's GPU"
expect 'memory read back 1048576 of 1048576 bytes' "host-visible memory not read back"
expect 'submit fence signaled' "the submission's fence did not signal"
expect 'semaphore signaled and waited for' "a semaphore between two submissions failed"
expect 'fence sync file polls readable, file info 0 status 1 fences 1' \
  "the fence's sync file is not a signaled sync file"
expect 'ok' "the client did not end"
[ "$status" -eq 0 ] || { echo "FAIL: the client exited $status"; fail=1; }
sync_files=$(find "$root/files" -name sync_file | wc -l)
echo "sync files the driver made: $sync_files"
[ "$sync_files" -ge 1 ] || { echo "FAIL: no sync file of the driver"; fail=1; }
kill -0 "$driver_pid" 2>/dev/null || { echo "FAIL: the driver died"; fail=1; }
[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
