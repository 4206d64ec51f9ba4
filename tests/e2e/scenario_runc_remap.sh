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
# Both GPUs of the container mapped, each onto a different GPU of the larger machine (its
# gpu_ids are 0x4...), as the restore log's mapping says.
MAPPED=$(grep -oE "GPU 0x1(000|111) -> 0x[0-9a-f]+" "$WORK/restore-wd/restore.log" | sort -u)
[ "$(echo "$MAPPED" | grep -c .)" = 2 ] ||
    fail "not one mapping for each of the container's two GPUs: $MAPPED"
[ "$(echo "$MAPPED" | grep -cE -- "-> 0x4[0-9a-f]{3}$")" = 2 ] &&
    [ "$(echo "$MAPPED" | awk '{print $4}' | sort -u | grep -c .)" = 2 ] ||
    fail "the container's GPUs are not mapped onto two distinct GPUs of the larger machine: $MAPPED"
for id in $(echo "$MAPPED" | awk '{print $4}'); do
    "$TOOL" mock status --root "$ROOT" | grep -qE "^GPU $id " ||
        fail "GPU $id of the mapping is not a GPU of the larger machine: $("$TOOL" mock status --root "$ROOT")"
done
note "runc remap: restored onto $(grep -oE 'GPU 0x1000 -> 0x[0-9a-f]+' "$WORK/restore-wd/restore.log" |
    head -1), checksum $ROUND_CHECKSUM"
