#pragma once
/// \file
/// The KernelInterface that issues real system calls, ioctls and libdrm_amdgpu calls.

#include "kfd/kernel_interface.h"

#include <memory>

namespace kfd {

/// The real kernel: thin wrappers, no decisions.
std::unique_ptr<KernelInterface> makeRealKernel();

} // namespace kfd
