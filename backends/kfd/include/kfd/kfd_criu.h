#pragma once
/// \file
/// AMDKFD_IOC_CRIU_OP and AMDKFD_IOC_GET_VERSION as typed calls: each fills the kernel's structs,
/// issues one ioctl and turns a failure into an Error naming the op and what to do about it.

#include "base/result.h"
#include "kfd/kernel_interface.h"
#include "kfd/kfd_uapi.h"

#include <cstdint>
#include <vector>

namespace kfd {

/// What PROCESS_INFO reports (and, as a side effect, the process's queues are paused).
struct ProcessInfo {
    uint32_t pid = 0; ///< the process's pid in its own pid namespace
    uint32_t numDevices = 0;
    uint32_t numBos = 0;
    uint32_t numObjects = 0;
    uint64_t privDataSize = 0;
};

/// What CHECKPOINT fills in. BO buckets of VRAM/GTT BOs carry a dmabuf fd owned by the caller.
struct CheckpointData {
    std::vector<kfd_criu_device_bucket> devices;
    std::vector<kfd_criu_bo_bucket> bos;
    std::vector<uint8_t> privData;
    uint32_t numObjects = 0;
};

/// Name of a kfd_criu_op ("PROCESS_INFO", ...).
const char* criuOpName(uint32_t op);

/// AMDKFD_IOC_GET_VERSION: {major, minor}.
base::Result<std::pair<uint32_t, uint32_t>> kfdGetVersion(KernelInterface& kernel, int kfdFd);
/// PROCESS_INFO on the KFD file of a process: pauses its queues and reports its sizes.
base::Result<ProcessInfo> criuProcessInfo(KernelInterface& kernel, int kfdFd);
/// CHECKPOINT with arrays sized from `info`.
base::Result<CheckpointData> criuCheckpoint(KernelInterface& kernel, int kfdFd,
                                            const ProcessInfo& info);
/// UNPAUSE: lets the queues paused by PROCESS_INFO run again.
base::Result<void> criuUnpause(KernelInterface& kernel, int kfdFd);
/// RESTORE into the process owning `kfdFd`; fills restored_offset and dmabuf_fd of `bos`.
base::Result<void> criuRestore(KernelInterface& kernel, int kfdFd,
                               std::vector<kfd_criu_device_bucket>& devices,
                               std::vector<kfd_criu_bo_bucket>& bos, std::vector<uint8_t>& privData,
                               uint32_t numObjects);
/// RESUME of `pid`; false when the kernel knows no KFD process of that pid (ESRCH).
base::Result<bool> criuResume(KernelInterface& kernel, int kfdFd, int pid);

} // namespace kfd
