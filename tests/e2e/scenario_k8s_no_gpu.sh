#!/usr/bin/env bash
# Kubernetes through containerd's CRI with a job that uses no GPU, the plugin loaded with the
# mock machine's options: CheckpointContainer while the job keeps running, the archive made a
# checkpoint image in the registry, the node gone, and the job restored as a new pod on another
# node; it finishes with the checksum of an uninterrupted run.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/k8s_lib.sh"
k8s_machine 2
nothing() { :; }
ARGS=(--steps 80 --step-ms 50)
EXPECTED=$(cpu_checksum "${ARGS[@]}")
k8s_move "[]" "[]" nothing "$CPU_WORKLOAD" "${ARGS[@]}"
[ "$ROUND_CHECKSUM" = "$EXPECTED" ] ||
    fail "checksum after the restore $ROUND_CHECKSUM, uninterrupted run $EXPECTED"
note "k8s without a GPU: checkpointed, restored as a new pod on another node; checksum $ROUND_CHECKSUM"
