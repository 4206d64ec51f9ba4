#pragma once
/// \file
/// The kernel the settings ask for: the real one, or, with the test option `kfd-driver`, the
/// render nodes of a user-space KFD driver (tests/kfd/DRIVER.md) reached as the KFD backend's
/// DriverKernel reaches them: the render nodes are files of the driver held as real fds of its
/// block nodes; their DRM ioctls go to the driver with their struct alone
/// (kfddriver::kDrmUserIoctl), which copies the buffers they point at from and to this process
/// as the kernel does; their mmaps map the fd where the driver says the BO lies; fstat and the
/// devices' stat are the driver's; the SDMA copies' libdrm_amdgpu calls run on the driver's
/// engine. /dev/dri lists the machine's render nodes (its topology's render minors that its /dev
/// has); nothing else of sysfs is the driver's, so the topology is read from the render nodes.
/// close, dup, kcmp, /proc and pidfd_getfd are the real kernel's (the fds and processes are real).

#include "amdgpu-drm/kernel_interface.h"

#include "base/result.h"
#include "settings/settings.h"

#include <memory>

namespace drm {

/// makeRealKernel(), or over the driver `settings.kfdDriver` names once that root is found
/// trusted (owned by root or this user, writable by no one else, as every directory above it),
/// else an error naming the option.
base::Result<std::shared_ptr<KernelInterface>> kernelFor(const settings::Settings& settings);

} // namespace drm
