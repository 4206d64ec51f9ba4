#!/usr/bin/env bash
# podman end to end onto another machine (issue 21): a container whose process uses the mock GPU
# is checkpointed with `podman container checkpoint --export`, the mock machine is replaced by
# another at the same place (four GPUs, other gpu_ids and render minors), the export is restored
# with `podman container restore --import --name NEW`, the plugin maps the container's two GPUs
# onto the new ones, and the workload finishes with the checksum of an uninterrupted run. criu's
# options come from the file of the container's org.criu.config annotation (`podman run
# --annotation`), which the export carries to the restore.
source "$(dirname "$0")/podman_lib.sh"
podman_prepare "$WORK/criu-podman.conf" "" 65536 500
podman_move "$WORK/criu-podman.conf" "$WORK/criu-podman.conf" 0x4000 150
check_system_untouched
note "podman export/import: restored onto $MOVED_TO, checksum $EXPECTED"
