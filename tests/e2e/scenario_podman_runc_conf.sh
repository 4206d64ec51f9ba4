#!/usr/bin/env bash
# podman with criu's options in runc's configuration file (issue 21): no org.criu.config
# annotation, so runc has criu read /etc/criu/runc.conf (with a criu that has no --plugin-option,
# the plugin's options are in its own /etc/criu/amdgpu.conf), as a podman host is set up. Both
# files exist only in this scenario's mount namespace, where /etc is a private overlay: the
# machine's /etc is never written. The container is checkpointed with --export, the machine is
# replaced (other gpu_ids and render minors), the export is restored with --import, and the
# workload, stopped then, finishes with the checksum of an uninterrupted run of as many steps.
source "$(dirname "$0")/podman_lib.sh"
private_overlay /etc
podman_prepare /etc/criu/runc.conf /etc/criu/amdgpu.conf 2 65536
podman_move - /etc/criu/runc.conf 0x1000 0x6000 170
check_system_untouched
note "podman with /etc/criu/runc.conf: GPU 0x1000 restored onto $MOVED_TO, checksum $EXPECTED after $STOPPED_AFTER steps"
