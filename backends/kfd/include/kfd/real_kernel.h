#pragma once
/// \file
/// The KernelInterface that issues real system calls, ioctls and libdrm_amdgpu calls.

#include "kfd/kernel_interface.h"

#include <memory>

namespace kfd {

/// How long ptraceDetach() waits for the tracee's stop by default.
inline constexpr int kDefaultStopWaitMs = 2000;

/// The real kernel: thin wrappers, no decisions. ptraceDetach() waits at most `stopWaitMs` for
/// the tracee to stop (a task in a frozen cgroup or an uninterruptible sleep does not) and then
/// answers -ETIMEDOUT, the task still attached.
std::unique_ptr<KernelInterface> makeRealKernel(int stopWaitMs = kDefaultStopWaitMs);

} // namespace kfd
