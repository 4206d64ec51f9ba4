#pragma once
/// \file
/// How a preloaded program's DRM ioctls on a render node reach the driver (render_node_service.h):
/// an Op::Ioctl whose `b` is kDrmUserIoctl carries only the ioctl's struct; the driver copies the
/// user buffers it points at in from the caller's memory and back out, as the kernel's
/// copy_from_user and copy_to_user do (kDrmUserIoctl, in the protocol's header: the amdgpu-drm
/// backend on the driver sends it too). Other Op::Ioctl requests keep their meaning.

#include "kfd/driver_protocol.h"

#include <cstdint>
#include <string>

namespace kfddriver {

/// The tree that stands for /sys/dev/char of the driver at `root`: DRM_MAJOR:MINOR/device/drm with
/// the card and render node names of each render node opened (libdrm's drmNodeIsDRM and
/// drmGetMinorNameForFD read it).
inline std::string drmSysfsPath(const std::string& root) {
    return root + "/drm-sysfs";
}

} // namespace kfddriver
