#pragma once
/// \file
/// The KernelInterface of a user-space KFD driver (tests/kfd/DRIVER.md), chosen only when the
/// test option `kfd-driver` names its root: /dev/kfd and render nodes are files of the driver,
/// held as real fds of its block nodes (ROOT/files/ID/NAME); their ioctls, fstat and the
/// devices' stat go to the driver over ROOT/driver.sock; the libdrm_amdgpu calls of SDMA copies
/// run on the driver's engine. What the fds are not asked of the driver for (close, dup, kcmp,
/// /proc, pidfd_getfd, ptrace) is the real kernel's, as the fds and processes are real.

#include "base/result.h"
#include "kfd/kernel_interface.h"
#include "settings/settings.h"

#include <sys/stat.h>

#include <functional>
#include <memory>
#include <string>

namespace kfd {

/// DriverKernel over the driver at `root`, with `real` for the calls the real kernel answers.
std::unique_ptr<KernelInterface> makeDriverKernel(const std::string& root,
                                                  std::unique_ptr<KernelInterface> real);

/// `st`, the real kernel's stat of a file at `path`: when it is a node of the memory of the
/// machine at `root` at a device path (/dev/kfd, /dev/dri/renderD<N>:
/// kfddriver::isMachineMemory), it becomes the device `driverKernel` (a DriverKernel over that
/// root) says is there, its type and number (the inode stays the node's, as a ROCm machine's
/// /dev node has its own); else it stays as it is. Answers 0 or -errno.
int asMachineDevice(KernelInterface& driverKernel, const std::string& root, const std::string& path,
                    struct stat* st);

/// The kernel the settings ask for: `makeReal()`, or with option `kfd-driver` set, DriverKernel
/// over that root once it is found trusted (owned by root or this user, writable by no one else,
/// as every directory above it), else an error naming the option.
base::Result<std::shared_ptr<KernelInterface>>
kernelFor(const settings::Settings& settings,
          const std::function<std::unique_ptr<KernelInterface>()>& makeReal);

} // namespace kfd
