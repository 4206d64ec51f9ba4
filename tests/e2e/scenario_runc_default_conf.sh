#!/usr/bin/env bash
# runc end to end with criu's options in runc's default file, /etc/criu/runc.conf (no
# org.criu.config annotation), and, with a criu that has no --plugin-option, the plugin's options
# in its own /etc/criu/amdgpu.conf, nothing in the environment: as a Kubernetes node is set up. It
# runs in a mount namespace of its own where /etc is an overlay: both files exist only there, and
# the machine's /etc never changes, whatever happens to the test.
if [ "${E2E_PRIVATE_ETC:-0}" != 1 ]; then
    E2E_PRIVATE_ETC=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"
mkdir -p "$WORK/etc-upper" "$WORK/etc-work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$WORK/etc-upper,workdir=$WORK/etc-work" /etc ||
    fail "cannot lay a private overlay over /etc"
source "$(dirname "$0")/runc_lib.sh"
trap 'remove_container; umount /etc; cleanup' EXIT
ROOT=$(make_machine machine --gpus 2)
write_criu_conf /etc/criu/runc.conf "$ROOT" /etc/criu/amdgpu.conf
reset_machine() { "$TOOL" mock reset --root "$ROOT" >/dev/null; }
runc_round "$ROOT" /etc/criu/runc.conf - reset_machine
note "runc with /etc/criu/runc.conf: checksum $ROUND_CHECKSUM matches the uninterrupted run"
