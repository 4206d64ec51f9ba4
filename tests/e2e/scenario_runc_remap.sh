#!/usr/bin/env bash
# runc end to end onto a larger machine: the container is checkpointed with `runc checkpoint`,
# the mock machine is replaced (same place, four GPUs with other gpu_ids and render minors), and
# `runc restore` maps the container's two GPUs onto the new ones; the workload finishes with the
# checksum of an uninterrupted run.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/runc_lib.sh"
ROOT=$(make_machine machine --gpus 2)
write_criu_conf "$WORK/criu-runc.conf" "$ROOT"
larger_machine() { replace_machine "$ROOT"; }
runc_round "$ROOT" "$WORK/criu-runc.conf" "$WORK/criu-runc.conf" larger_machine
grep -qE "GPU 0x1000 -> 0x4[0-9a-f]{3}" "$WORK/restore-wd/restore.log" ||
    fail "no remapping of GPU 0x1000 in the restore log"
"$TOOL" mock status --root "$ROOT" | grep -q "renderD15[0-9]" ||
    fail "the restored container does not use the larger machine's GPUs"
note "runc remap: restored onto $(grep -oE 'GPU 0x1000 -> 0x[0-9a-f]+' "$WORK/restore-wd/restore.log" |
    head -1), checksum $ROUND_CHECKSUM"
