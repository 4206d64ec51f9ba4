#include "drm_calls.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

namespace drm {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;

base::Result<std::string> DrmCalls::driverName(int fd) {
    char name[64] = {};
    drm_version v{};
    v.name = name;
    v.name_len = sizeof name - 1;
    int r = kernel_.ioctl(fd, DRM_IOCTL_VERSION, &v);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "DRM_IOCTL_VERSION failed");
    return std::string(name, strnlen(name, sizeof name - 1));
}

base::Result<std::vector<BoInfo>> DrmCalls::listHandles(int fd) {
    HAL_TRY_ASSIGN(std::vector<GemListHandlesEntry> entries,
                   gem::listHandles([this, fd](unsigned long request, void* arg) {
                       return kernel_.ioctl(fd, request, arg);
                   }));
    std::vector<BoInfo> out;
    for (const GemListHandlesEntry& e : entries)
        out.push_back(BoInfo{e.gemHandle, (e.flags & kListHandlesIsImport) != 0, e.size,
                             e.preferredDomains, e.allocFlags, e.alignment});
    return out;
}

base::Result<std::vector<GemVmEntry>> DrmCalls::mappingInfo(int fd, uint32_t handle) {
    std::vector<GemVmEntry> entries(4);
    for (int round = 0; round < kMaxListRetries; ++round) {
        GemOp args;
        args.handle = handle;
        args.op = kGemOpGetMappingInfo;
        args.value = reinterpret_cast<uintptr_t>(entries.data());
        args.numEntries = static_cast<uint32_t>(entries.size());
        int r = kernel_.ioctl(fd, kIoctlGemOp, &args);
        if (r == -EINVAL)
            return makeErrnoError(ErrorCode::NotSupported, -r,
                                  "the kernel lacks GEM_OP GET_MAPPING_INFO (Linux 6.18+)");
        if (r < 0 && r != -ENOSPC)
            return makeErrnoError(ErrorCode::Kernel, -r,
                                  "GEM_OP GET_MAPPING_INFO of BO handle %u failed", handle);
        if (args.numEntries > entries.size()) {
            entries.resize(args.numEntries);
            continue;
        }
        entries.resize(args.numEntries);
        return entries;
    }
    return makeError(ErrorCode::Kernel,
                     "GET_MAPPING_INFO of BO handle %u still wants a larger array after %d rounds",
                     handle, kMaxListRetries);
}

base::Result<uint64_t> DrmCalls::mmapOffset(int fd, uint32_t handle) {
    drm_amdgpu_gem_mmap args{};
    args.in.handle = handle;
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_GEM_MMAP, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "GEM_MMAP of BO handle %u failed", handle);
    return static_cast<uint64_t>(args.out.addr_ptr);
}

base::Result<bool> DrmCalls::waitIdle(int fd, uint32_t handle, uint64_t deadlineNs) {
    drm_amdgpu_gem_wait_idle args{};
    args.in.handle = handle;
    args.in.timeout = deadlineNs;
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "GEM_WAIT_IDLE of BO handle %u failed",
                              handle);
    return args.out.status == 0;
}

base::Result<uint32_t> DrmCalls::gemCreate(int fd, uint64_t size, uint64_t alignment,
                                           uint64_t domains, uint64_t flags) {
    drm_amdgpu_gem_create args{};
    args.in.bo_size = size;
    args.in.alignment = alignment;
    args.in.domains = domains;
    args.in.domain_flags = flags;
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_GEM_CREATE, &args);
    if (r < 0)
        return makeErrnoError(
            ErrorCode::Kernel, -r, "GEM_CREATE of %llu bytes (domains 0x%llx, flags 0x%llx) failed",
            static_cast<unsigned long long>(size), static_cast<unsigned long long>(domains),
            static_cast<unsigned long long>(flags));
    return static_cast<uint32_t>(args.out.handle);
}

base::Result<bool> DrmCalls::changeHandleRuns(int fd, uint32_t handle) {
    GemChangeHandle args;
    args.handle = handle;
    args.newHandle = handle;
    int r = kernel_.ioctl(fd, kIoctlGemChangeHandle, &args);
    if (r == -EINVAL)
        return false;
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "GEM_CHANGE_HANDLE %u -> %u failed", handle,
                              handle);
    return true;
}

base::Result<void> DrmCalls::gemClose(int fd, uint32_t handle) {
    drm_gem_close args{};
    args.handle = handle;
    int r = kernel_.ioctl(fd, DRM_IOCTL_GEM_CLOSE, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "GEM_CLOSE of handle %u failed", handle);
    return base::success();
}

base::Result<void> DrmCalls::vaMap(int fd, uint32_t handle, uint64_t addr, uint64_t offset,
                                   uint64_t size, uint64_t flags) {
    drm_amdgpu_gem_va args{};
    args.handle = handle;
    args.operation = AMDGPU_VA_OP_MAP;
    args.flags = static_cast<uint32_t>(flags);
    args.va_address = addr;
    args.offset_in_bo = offset;
    args.map_size = size;
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_GEM_VA, &args);
    if (r < 0)
        return makeErrnoError(
            ErrorCode::Kernel, -r,
            "GEM_VA MAP of BO handle %u at 0x%llx (+0x%llx, 0x%llx bytes, "
            "flags 0x%llx) failed",
            handle, static_cast<unsigned long long>(addr), static_cast<unsigned long long>(offset),
            static_cast<unsigned long long>(size), static_cast<unsigned long long>(flags));
    return base::success();
}

base::Result<void> DrmCalls::vaUnmap(int fd, uint32_t handle, uint64_t addr, uint64_t offset,
                                     uint64_t size) {
    drm_amdgpu_gem_va args{};
    args.handle = handle;
    args.operation = AMDGPU_VA_OP_UNMAP;
    args.va_address = addr;
    args.offset_in_bo = offset;
    args.map_size = size;
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_GEM_VA, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r,
                              "GEM_VA UNMAP of BO handle %u at 0x%llx failed", handle,
                              static_cast<unsigned long long>(addr));
    return base::success();
}

base::Result<uint64_t> DrmCalls::submitSdma(int fd, uint32_t ctxId, uint64_t ibVa,
                                            uint32_t ibDwords,
                                            const std::vector<uint32_t>& handles) {
    // amdgpu_cs_ioctl: the chunks array holds user pointers to drm_amdgpu_cs_chunk, each naming
    // its data and its length in dwords (amdgpu_cs_pass1).
    drm_amdgpu_cs_chunk_ib ib{};
    ib.va_start = ibVa;
    ib.ib_bytes = ibDwords * 4u;
    ib.ip_type = AMDGPU_HW_IP_DMA;
    std::vector<drm_amdgpu_bo_list_entry> entries;
    for (uint32_t handle : handles)
        entries.push_back(drm_amdgpu_bo_list_entry{handle, 0});
    drm_amdgpu_bo_list_in list{};
    list.bo_number = static_cast<uint32_t>(entries.size());
    list.bo_info_size = sizeof(drm_amdgpu_bo_list_entry);
    list.bo_info_ptr = reinterpret_cast<uintptr_t>(entries.data());
    drm_amdgpu_cs_chunk chunks[2] = {};
    chunks[0].chunk_id = AMDGPU_CHUNK_ID_IB;
    chunks[0].length_dw = sizeof ib / 4;
    chunks[0].chunk_data = reinterpret_cast<uintptr_t>(&ib);
    chunks[1].chunk_id = AMDGPU_CHUNK_ID_BO_HANDLES;
    chunks[1].length_dw = sizeof list / 4;
    chunks[1].chunk_data = reinterpret_cast<uintptr_t>(&list);
    uint64_t pointers[2] = {reinterpret_cast<uintptr_t>(&chunks[0]),
                            reinterpret_cast<uintptr_t>(&chunks[1])};
    drm_amdgpu_cs args{};
    args.in.ctx_id = ctxId;
    args.in.num_chunks = 2;
    args.in.chunks = reinterpret_cast<uintptr_t>(pointers);
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_CS, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r,
                              "AMDGPU_CS of an SDMA copy on context %u failed", ctxId);
    return static_cast<uint64_t>(args.out.handle);
}

base::Result<bool> DrmCalls::waitSdma(int fd, uint32_t ctxId, uint64_t seq, uint64_t deadlineNs) {
    drm_amdgpu_wait_cs args{};
    args.in.handle = seq;
    args.in.timeout = deadlineNs;
    args.in.ip_type = AMDGPU_HW_IP_DMA;
    args.in.ctx_id = ctxId;
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_WAIT_CS, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r,
                              "AMDGPU_WAIT_CS of SDMA copy %llu on context %u failed",
                              static_cast<unsigned long long>(seq), ctxId);
    return args.out.status == 0; // amdgpu_cs_wait_ioctl: status 1 when the timeout passed first
}

base::Result<int> DrmCalls::exportDmabuf(int fd, uint32_t handle) {
    drm_prime_handle args{};
    args.handle = handle;
    args.flags = DRM_CLOEXEC | DRM_RDWR;
    int r = kernel_.ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "PRIME_HANDLE_TO_FD of BO handle %u failed",
                              handle);
    return args.fd;
}

base::Result<uint32_t> DrmCalls::importDmabuf(int fd, int dmabufFd) {
    drm_prime_handle args{};
    args.fd = dmabufFd;
    int r = kernel_.ioctl(fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "PRIME_FD_TO_HANDLE failed");
    return args.handle;
}

base::Result<void> DrmCalls::info(int fd, uint32_t query, void* out, uint32_t size,
                                  const drm_amdgpu_info* extra) {
    drm_amdgpu_info args{};
    if (extra)
        args = *extra;
    args.return_pointer = reinterpret_cast<uintptr_t>(out);
    args.return_size = size;
    args.query = query;
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_INFO, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "AMDGPU_INFO query 0x%x failed", query);
    return base::success();
}

base::Result<std::optional<uint64_t>> DrmCalls::ctxQueryState2(int fd, uint32_t id) {
    drm_amdgpu_ctx args{};
    args.in.op = AMDGPU_CTX_OP_QUERY_STATE2;
    args.in.ctx_id = id;
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_CTX, &args);
    if (r == -EINVAL)
        return std::optional<uint64_t>();
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "AMDGPU_CTX QUERY_STATE2 of context %u failed",
                              id);
    return std::optional<uint64_t>(args.out.state.flags);
}

base::Result<uint32_t> DrmCalls::ctxAlloc(int fd) {
    drm_amdgpu_ctx args{};
    args.in.op = AMDGPU_CTX_OP_ALLOC_CTX;
    args.in.priority = AMDGPU_CTX_PRIORITY_NORMAL;
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_CTX, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "AMDGPU_CTX ALLOC_CTX failed");
    return args.out.alloc.ctx_id;
}

base::Result<void> DrmCalls::ctxFree(int fd, uint32_t id) {
    drm_amdgpu_ctx args{};
    args.in.op = AMDGPU_CTX_OP_FREE_CTX;
    args.in.ctx_id = id;
    int r = kernel_.ioctl(fd, DRM_IOCTL_AMDGPU_CTX, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "AMDGPU_CTX FREE_CTX of context %u failed",
                              id);
    return base::success();
}

base::Result<std::optional<uint64_t>> DrmCalls::syncobjQuery(int fd, uint32_t handle,
                                                             bool lastSubmitted) {
    uint64_t point = 0;
    drm_syncobj_timeline_array args{};
    args.handles = reinterpret_cast<uintptr_t>(&handle);
    args.points = reinterpret_cast<uintptr_t>(&point);
    args.count_handles = 1;
    args.flags = lastSubmitted ? DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED : 0;
    int r = kernel_.ioctl(fd, DRM_IOCTL_SYNCOBJ_QUERY, &args);
    if (r == -ENOENT)
        return std::optional<uint64_t>();
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "SYNCOBJ_QUERY of syncobj %u failed", handle);
    return std::optional<uint64_t>(point);
}

base::Result<DrmCalls::FenceState> DrmCalls::syncobjWait(int fd, uint32_t handle, uint64_t point,
                                                         uint64_t deadlineNs) {
    drm_syncobj_timeline_wait args{};
    args.handles = reinterpret_cast<uintptr_t>(&handle);
    args.points = reinterpret_cast<uintptr_t>(&point);
    args.timeout_nsec = static_cast<int64_t>(deadlineNs);
    args.count_handles = 1;
    int r = kernel_.ioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT, &args);
    if (r == 0)
        return FenceState::Signaled;
    if (r == -ETIME)
        return FenceState::Pending;
    if (r == -EINVAL)
        return FenceState::Absent; // no fence, and no WAIT_FOR_SUBMIT to wait for one
    return makeErrnoError(ErrorCode::Kernel, -r,
                          "SYNCOBJ_TIMELINE_WAIT of point %llu of syncobj %u failed",
                          static_cast<unsigned long long>(point), handle);
}

base::Result<uint32_t> DrmCalls::syncobjCreate(int fd, bool signaled) {
    drm_syncobj_create args{};
    args.flags = signaled ? DRM_SYNCOBJ_CREATE_SIGNALED : 0;
    int r = kernel_.ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "SYNCOBJ_CREATE failed");
    return args.handle;
}

base::Result<void> DrmCalls::syncobjDestroy(int fd, uint32_t handle) {
    drm_syncobj_destroy args{};
    args.handle = handle;
    int r = kernel_.ioctl(fd, DRM_IOCTL_SYNCOBJ_DESTROY, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "SYNCOBJ_DESTROY of syncobj %u failed",
                              handle);
    return base::success();
}

base::Result<void> DrmCalls::syncobjTimelineSignal(int fd, uint32_t handle, uint64_t point) {
    drm_syncobj_timeline_array args{};
    args.handles = reinterpret_cast<uintptr_t>(&handle);
    args.points = reinterpret_cast<uintptr_t>(&point);
    args.count_handles = 1;
    int r = kernel_.ioctl(fd, DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL, &args);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r,
                              "SYNCOBJ_TIMELINE_SIGNAL of point %llu of syncobj %u failed",
                              static_cast<unsigned long long>(point), handle);
    return base::success();
}

} // namespace drm
