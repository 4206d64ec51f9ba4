#pragma once
/// \file
/// The libdrm_amdgpu calls an SDMA copy needs, and nothing else: the one boundary between the
/// shared copy engine and libdrm. The real implementation (real_libdrm.h) is one call per
/// method; tests substitute a fake that executes the submitted packets against fake memory.
///
/// Convention: calls return 0 (or a non-negative fd) on success and a negative errno on failure,
/// as libdrm does.

#include <cstdint>
#include <string>
#include <vector>

namespace sdma {

/// An amdgpu_device_handle, as an integer so that a fake can hand out its own.
enum class Device : uintptr_t {};
/// A buffer object of a Device (amdgpu_bo_handle).
enum class Bo : uintptr_t {};
/// A GPU virtual address range reservation (amdgpu_va_handle).
enum class VaRange : uintptr_t {};
/// A command submission context (amdgpu_context_handle).
enum class Context : uintptr_t {};
/// A list of BOs a submission uses (amdgpu_bo_list_handle).
enum class BoList : uintptr_t {};

/// The libdrm_amdgpu calls (and the two system calls) of an SDMA copy session.
class Libdrm {
public:
    virtual ~Libdrm() = default;

    /// open(2) of a render node, read-write and close-on-exec: an fd or -errno.
    virtual int openRenderNode(const std::string& path) = 0;
    /// close(2) of an fd openRenderNode returned: 0 or -errno.
    virtual int closeRenderNode(int fd) = 0;
    /// amdgpu_device_initialize on a render-node fd.
    virtual int deviceInitialize(int fd, Device* dev) = 0;
    /// amdgpu_device_deinitialize.
    virtual int deviceDeinitialize(Device dev) = 0;
    /// amdgpu_bo_import of a dmabuf fd (the caller keeps the fd); `size` receives the BO's
    /// allocation size.
    virtual int boImportDmabuf(Device dev, int dmabufFd, Bo* bo, uint64_t* size) = 0;
    /// amdgpu_create_bo_from_user_mem (`cpu` page aligned, `size` a page multiple).
    virtual int boFromUserMem(Device dev, void* cpu, uint64_t size, Bo* bo) = 0;
    /// amdgpu_bo_alloc of a CPU-accessible GTT BO (command buffers).
    virtual int boAllocGtt(Device dev, uint64_t size, Bo* bo) = 0;
    /// amdgpu_bo_cpu_map.
    virtual int boCpuMap(Bo bo, void** cpu) = 0;
    /// amdgpu_bo_cpu_unmap.
    virtual int boCpuUnmap(Bo bo) = 0;
    /// amdgpu_bo_free.
    virtual int boFree(Bo bo) = 0;
    /// amdgpu_va_range_alloc in the general range.
    virtual int vaRangeAlloc(Device dev, uint64_t size, uint64_t alignment, uint64_t* va,
                             VaRange* range) = 0;
    /// amdgpu_va_range_free.
    virtual int vaRangeFree(VaRange range) = 0;
    /// amdgpu_bo_va_op: maps (or unmaps) the first `size` bytes of `bo` at `va`.
    virtual int boVaOp(Bo bo, uint64_t size, uint64_t va, bool map) = 0;
    /// amdgpu_cs_ctx_create.
    virtual int ctxCreate(Device dev, Context* ctx) = 0;
    /// amdgpu_cs_ctx_free.
    virtual int ctxFree(Context ctx) = 0;
    /// amdgpu_bo_list_create.
    virtual int boListCreate(Device dev, const std::vector<Bo>& bos, BoList* list) = 0;
    /// amdgpu_bo_list_destroy.
    virtual int boListDestroy(BoList list) = 0;
    /// amdgpu_cs_submit of one IB (`ibDwords` dwords at GPU VA `ibVa`) on SDMA ring 0; `seq`
    /// receives the fence sequence number.
    virtual int submitSdma(Context ctx, BoList list, uint64_t ibVa, uint32_t ibDwords,
                           uint64_t* seq) = 0;
    /// amdgpu_cs_query_fence_status of an SDMA submission: `signaled` says whether it completed
    /// within `timeoutNs`.
    virtual int waitFence(Context ctx, uint64_t seq, uint64_t timeoutNs, bool* signaled) = 0;
};

} // namespace sdma
