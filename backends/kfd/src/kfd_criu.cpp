#include "kfd/kfd_criu.h"

#include <cstring>

namespace kfd {

const char* boKindName(uint32_t f) {
    if (f & KFD_IOC_ALLOC_MEM_FLAGS_VRAM)
        return "VRAM";
    if (f & KFD_IOC_ALLOC_MEM_FLAGS_GTT)
        return "GTT";
    if (f & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)
        return "USERPTR";
    if (f & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL)
        return "DOORBELL";
    if (f & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)
        return "MMIO_REMAP";
    return "?";
}

const char* criuOpName(uint32_t op) {
    switch (op) {
    case KFD_CRIU_OP_PROCESS_INFO:
        return "PROCESS_INFO";
    case KFD_CRIU_OP_CHECKPOINT:
        return "CHECKPOINT";
    case KFD_CRIU_OP_UNPAUSE:
        return "UNPAUSE";
    case KFD_CRIU_OP_RESTORE:
        return "RESTORE";
    case KFD_CRIU_OP_RESUME:
        return "RESUME";
    }
    return "unknown op";
}

namespace {

base::Error opError(uint32_t op, int negErrno) {
    const char* hint = "";
    if (negErrno == -EPERM || negErrno == -EACCES)
        hint = " (needs CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN)";
    else if (negErrno == -EBADF)
        hint = " (the KFD file is not usable from this process: is the task seized by criu?)";
    return base::makeErrnoError(base::ErrorCode::Kernel, -negErrno,
                                "AMDKFD_IOC_CRIU_OP %s failed%s", criuOpName(op), hint);
}

uint64_t ptr(const void* p) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

} // namespace

base::Result<std::pair<uint32_t, uint32_t>> kfdGetVersion(KernelInterface& kernel, int kfdFd) {
    kfd_ioctl_get_version_args v = {};
    int r = kernel.ioctl(kfdFd, AMDKFD_IOC_GET_VERSION, &v);
    if (r < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -r, "AMDKFD_IOC_GET_VERSION failed");
    return std::make_pair(v.major_version, v.minor_version);
}

base::Result<ProcessInfo> criuProcessInfo(KernelInterface& kernel, int kfdFd) {
    kfd_ioctl_criu_args args = {};
    args.op = KFD_CRIU_OP_PROCESS_INFO;
    int r = kernel.ioctl(kfdFd, AMDKFD_IOC_CRIU_OP, &args);
    if (r < 0)
        return opError(args.op, r);
    ProcessInfo info;
    info.pid = args.pid;
    info.numDevices = args.num_devices;
    info.numBos = args.num_bos;
    info.numObjects = args.num_objects;
    info.privDataSize = args.priv_data_size;
    return info;
}

base::Result<CheckpointData> criuCheckpoint(KernelInterface& kernel, int kfdFd,
                                            const ProcessInfo& info) {
    CheckpointData data;
    data.devices.resize(info.numDevices);
    data.bos.resize(info.numBos);
    data.privData.resize(info.privDataSize);
    data.numObjects = info.numObjects;
    kfd_ioctl_criu_args args = {};
    args.op = KFD_CRIU_OP_CHECKPOINT;
    args.devices = ptr(data.devices.data());
    args.bos = ptr(data.bos.data());
    args.priv_data = ptr(data.privData.data());
    args.priv_data_size = info.privDataSize;
    args.num_devices = info.numDevices;
    args.num_bos = info.numBos;
    args.num_objects = info.numObjects;
    int r = kernel.ioctl(kfdFd, AMDKFD_IOC_CRIU_OP, &args);
    if (r < 0)
        return opError(args.op, r);
    return data;
}

base::Result<void> criuUnpause(KernelInterface& kernel, int kfdFd) {
    kfd_ioctl_criu_args args = {};
    args.op = KFD_CRIU_OP_UNPAUSE;
    int r = kernel.ioctl(kfdFd, AMDKFD_IOC_CRIU_OP, &args);
    if (r < 0)
        return opError(args.op, r);
    return base::success();
}

base::Result<void> criuRestore(KernelInterface& kernel, int kfdFd,
                               std::vector<kfd_criu_device_bucket>& devices,
                               std::vector<kfd_criu_bo_bucket>& bos, std::vector<uint8_t>& privData,
                               uint32_t numObjects) {
    kfd_ioctl_criu_args args = {};
    args.op = KFD_CRIU_OP_RESTORE;
    args.devices = ptr(devices.data());
    args.bos = ptr(bos.data());
    args.priv_data = ptr(privData.data());
    args.priv_data_size = privData.size();
    args.num_devices = static_cast<uint32_t>(devices.size());
    args.num_bos = static_cast<uint32_t>(bos.size());
    args.num_objects = numObjects;
    int r = kernel.ioctl(kfdFd, AMDKFD_IOC_CRIU_OP, &args);
    if (r < 0)
        return opError(args.op, r);
    return base::success();
}

base::Result<bool> criuResume(KernelInterface& kernel, int kfdFd, int pid) {
    kfd_ioctl_criu_args args = {};
    args.op = KFD_CRIU_OP_RESUME;
    args.pid = static_cast<uint32_t>(pid);
    int r = kernel.ioctl(kfdFd, AMDKFD_IOC_CRIU_OP, &args);
    if (r == -ESRCH)
        return false;
    if (r < 0)
        return opError(args.op, r);
    return true;
}

} // namespace kfd
