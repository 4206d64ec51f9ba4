#pragma once
/// \file
/// The amdgpu and DRM ioctls of render-node checkpoint/restore as typed calls returning Result,
/// including the grow-and-retry protocol of GEM_LIST_HANDLES and GET_MAPPING_INFO.

#include "amdgpu-drm/kernel_interface.h"
#include "uapi.h"

#include "base/result.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace drm {

/// One BO of a render-node file, as GEM_LIST_HANDLES reports it.
struct BoInfo {
    uint32_t handle = 0;
    bool isImport = false;
    uint64_t size = 0;
    uint64_t preferredDomains = 0;
    uint64_t allocFlags = 0;
    uint64_t alignment = 0;
};

/// Typed ioctls on render-node fds.
class DrmCalls {
public:
    /// Calls go through `kernel`, which must outlive this object.
    explicit DrmCalls(KernelInterface& kernel) : kernel_(kernel) {}

    /// DRM_IOCTL_VERSION: the driver name ("amdgpu").
    base::Result<std::string> driverName(int fd);
    /// GEM_LIST_HANDLES, growing the array until every BO fits. EINVAL from the kernel becomes a
    /// NotSupported error (the kernel predates Linux 6.18).
    base::Result<std::vector<BoInfo>> listHandles(int fd);
    /// GEM_OP GET_MAPPING_INFO of one BO, growing the array until every mapping fits. EINVAL
    /// (a kernel before 6.18, the BO being there) becomes a NotSupported error.
    base::Result<std::vector<GemVmEntry>> mappingInfo(int fd, uint32_t handle);
    /// GEM_MMAP: the fake offset to mmap the BO at through this fd.
    base::Result<uint64_t> mmapOffset(int fd, uint32_t handle);
    /// GEM_WAIT_IDLE: waits until the GPU work on the BO is done or the monotonic clock reaches
    /// `deadlineNs` (absolute, as the kernel takes it). True when idle, false when still busy.
    base::Result<bool> waitIdle(int fd, uint32_t handle, uint64_t deadlineNs);
    /// GEM_CREATE: a new BO's handle.
    base::Result<uint32_t> gemCreate(int fd, uint64_t size, uint64_t alignment, uint64_t domains,
                                     uint64_t flags);
    /// Whether GEM_CHANGE_HANDLE runs, found without side effects: a change of `handle` (one
    /// this file holds) to itself. Where the ioctl runs (6.18.0 to 6.18.35) the kernel looks
    /// the handle up first (ENOENT for one the file does not hold) and then returns 0 for
    /// handle == new_handle; where it is unknown (before 6.18) or disabled (drm_invalid_op:
    /// 6.18.36+, 7.0.13+, 7.1+) it answers EINVAL whatever it is given. The restore never uses
    /// it (handle_plan.h); probe reports it.
    base::Result<bool> changeHandleRuns(int fd, uint32_t handle);
    /// GEM_CLOSE.
    base::Result<void> gemClose(int fd, uint32_t handle);
    /// GEM_VA MAP of [offset, offset+size) of the BO at GPU address `addr` with `flags`.
    base::Result<void> vaMap(int fd, uint32_t handle, uint64_t addr, uint64_t offset, uint64_t size,
                             uint64_t flags);
    /// GEM_VA UNMAP of the mapping of the BO at `addr` (amdgpu_vm_bo_unmap: ENOENT when the BO
    /// has none there).
    base::Result<void> vaUnmap(int fd, uint32_t handle, uint64_t addr, uint64_t offset,
                               uint64_t size);
    /// AMDGPU_CS of one IB of `ibDwords` dwords at GPU VA `ibVa` on SDMA ring 0 of context
    /// `ctxId`, the BOs `handles` in its BO list (an AMDGPU_CHUNK_ID_BO_HANDLES chunk, a list of
    /// the submission alone): the submission's sequence number.
    base::Result<uint64_t> submitSdma(int fd, uint32_t ctxId, uint64_t ibVa, uint32_t ibDwords,
                                      const std::vector<uint32_t>& handles);
    /// AMDGPU_WAIT_CS for SDMA submission `seq` of context `ctxId` until the monotonic clock
    /// reaches `deadlineNs` (absolute, amdgpu_gem_timeout): true when it completed, false when
    /// still running. A fence that ended in an error (a GPU reset) is the kernel's error.
    base::Result<bool> waitSdma(int fd, uint32_t ctxId, uint64_t seq, uint64_t deadlineNs);
    /// PRIME_HANDLE_TO_FD: a dma-buf fd of the BO.
    base::Result<int> exportDmabuf(int fd, uint32_t handle);
    /// PRIME_FD_TO_HANDLE: the handle of the dma-buf's BO in this fd.
    base::Result<uint32_t> importDmabuf(int fd, int dmabufFd);
    /// AMDGPU_INFO query `query` into `out` (`size` bytes); `extra` fills the query's union.
    base::Result<void> info(int fd, uint32_t query, void* out, uint32_t size,
                            const drm_amdgpu_info* extra = nullptr);

    // ---------------------------------------------------------------- GPU contexts
    /// AMDGPU_CTX_OP_QUERY_STATE2 of context `id`: its QUERY2 flags (reset, VRAM lost, guilty,
    /// RAS, reset in progress), or nothing when the file holds no context `id` (the kernel's
    /// EINVAL for an id idr_find does not know).
    base::Result<std::optional<uint64_t>> ctxQueryState2(int fd, uint32_t id);
    /// AMDGPU_CTX_OP_ALLOC_CTX at AMDGPU_CTX_PRIORITY_NORMAL: the new context's id.
    base::Result<uint32_t> ctxAlloc(int fd);
    /// AMDGPU_CTX_OP_FREE_CTX.
    base::Result<void> ctxFree(int fd, uint32_t id);

    // ------------------------------------------------------------------- syncobjs
    /// What a syncobj's fence at a point is.
    enum class FenceState {
        Signaled,
        Pending, ///< submitted, not signaled by the deadline (ETIME)
        Absent,  ///< no fence (a binary syncobj never signaled or reset; a point not submitted)
    };
    /// SYNCOBJ_QUERY of one syncobj: its timeline's signaled value (`lastSubmitted`: the last
    /// point submitted, DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED), 0 when it holds no timeline;
    /// nothing when the file holds no syncobj `handle` (ENOENT).
    base::Result<std::optional<uint64_t>> syncobjQuery(int fd, uint32_t handle, bool lastSubmitted);
    /// SYNCOBJ_TIMELINE_WAIT for point `point` of `handle` (0: its fence, binary or timeline)
    /// until the monotonic clock reaches `deadlineNs` (0: do not wait).
    base::Result<FenceState> syncobjWait(int fd, uint32_t handle, uint64_t point,
                                         uint64_t deadlineNs);
    /// SYNCOBJ_CREATE (DRM_SYNCOBJ_CREATE_SIGNALED when `signaled`): the new handle.
    base::Result<uint32_t> syncobjCreate(int fd, bool signaled);
    /// SYNCOBJ_DESTROY.
    base::Result<void> syncobjDestroy(int fd, uint32_t handle);
    /// SYNCOBJ_TIMELINE_SIGNAL of point `point` of `handle`.
    base::Result<void> syncobjTimelineSignal(int fd, uint32_t handle, uint64_t point);

private:
    KernelInterface& kernel_;
};

/// Upper bound on grow-and-retry rounds (the process is frozen; more means a broken kernel).
using gem::kMaxListRetries;

} // namespace drm
