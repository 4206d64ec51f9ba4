#!/usr/bin/env bash
# runc end to end: a container whose process uses the mock GPU is checkpointed with `runc
# checkpoint`, the GPU is reset (it forgets everything, as after a reboot), the container is
# restored with `runc restore`, and the workload finishes with the checksum of an uninterrupted
# run. criu's options come from the file the container's org.criu.config annotation names.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runc_lib.sh"
ROOT=$(make_machine machine --gpus 2)
write_criu_conf "$WORK/criu-runc.conf" "$ROOT"
reset_machine() { "$TOOL" mock reset --root "$ROOT" >/dev/null; }
runc_round "$ROOT" "$WORK/criu-runc.conf" "$WORK/criu-runc.conf" reset_machine
note "runc: checkpoint, GPU reset, restore; checksum $ROUND_CHECKSUM matches the uninterrupted run"
