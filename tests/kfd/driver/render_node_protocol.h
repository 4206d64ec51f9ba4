#pragma once
/// \file
/// How a preloaded program's DRM ioctls on a render node reach the driver (render_node_service.h):
/// an Op::Ioctl whose `b` is kDrmUserIoctl carries only the ioctl's struct; the driver copies the
/// user buffers it points at in from the caller's memory and back out, as the kernel's
/// copy_from_user and copy_to_user do. Other Op::Ioctl requests (the KFD backend's, with their
/// buffers in the message) keep their meaning.

#include <cstdint>
#include <string>

namespace kfddriver {

inline constexpr uint64_t kDrmUserIoctl = 0x4452'4d55'5345'5231ull; // "DRMUSER1"

/// The tree that stands for /sys/dev/char of the driver at `root`: DRM_MAJOR:MINOR/device/drm with
/// the card and render node names of each render node opened (libdrm's drmNodeIsDRM and
/// drmGetMinorNameForFD read it).
inline std::string drmSysfsPath(const std::string& root) {
    return root + "/drm-sysfs";
}

} // namespace kfddriver
