#pragma once
/// \file
/// The one boundary between the render-node backend and the outside world: every system call and
/// every libdrm_amdgpu call the backend makes goes through KernelInterface. The real implementation
/// (real_kernel.cpp) forwards each method to one call; tests substitute a stateful fake render
/// node that implements the same semantics, so all other backend code runs unchanged in tests.
/// Methods return 0 or a negative errno, as the calls they stand for do.

#include <libdrm/amdgpu.h>
#include <libdrm/amdgpu_drm.h>

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <string>

namespace drm {

/// System calls and libdrm_amdgpu calls, one method each.
class KernelInterface {
public:
    virtual ~KernelInterface() = default;

    // ------------------------------------------------------------------ system calls
    /// open(path, O_RDWR | O_CLOEXEC): an fd, or -errno.
    virtual int open(const std::string& path) = 0;
    /// close(fd).
    virtual void close(int fd) = 0;
    /// fcntl(fd, F_DUPFD_CLOEXEC, 0): a new fd, or -errno.
    virtual int dup(int fd) = 0;
    /// ioctl(fd, request, arg), retried on EINTR/EAGAIN: 0, or -errno.
    virtual int ioctl(int fd, unsigned long request, void* arg) = 0;
    /// fstat(fd, st): 0, or -errno.
    virtual int fstat(int fd, struct stat* st) = 0;
    /// mmap(nullptr, size, prot, MAP_SHARED, fd, offset): the address, or nullptr (errno in *err).
    virtual void* mmap(int fd, uint64_t offset, uint64_t size, int prot, int* err) = 0;
    /// munmap(addr, size).
    virtual void munmap(void* addr, uint64_t size) = 0;
    /// pidfd_getfd(pidfd_open(pid), targetFd): our own fd for the same open file, or -errno.
    virtual int pidGetFd(int pid, int targetFd) = 0;
    /// kcmp(pid1, pid2, KCMP_FILE, fd1, fd2): 0 when both fds are the same open file, 1 or 2 when
    /// not, -errno on failure.
    virtual int kcmpFiles(int pid1, int fd1, int pid2, int fd2) = 0;
    /// getpid().
    virtual int selfPid() = 0;

    // ------------------------------------------------------------ libdrm_amdgpu calls
    /// amdgpu_device_initialize.
    virtual int deviceInitialize(int fd, amdgpu_device_handle* dev) = 0;
    /// amdgpu_device_deinitialize.
    virtual int deviceDeinitialize(amdgpu_device_handle dev) = 0;
    /// amdgpu_bo_import of a dma-buf fd.
    virtual int boImportDmabuf(amdgpu_device_handle dev, int dmabufFd, amdgpu_bo_handle* bo) = 0;
    /// amdgpu_create_bo_from_user_mem.
    virtual int boFromUserMem(amdgpu_device_handle dev, void* cpu, uint64_t size,
                              amdgpu_bo_handle* bo) = 0;
    /// amdgpu_bo_alloc.
    virtual int boAlloc(amdgpu_device_handle dev, amdgpu_bo_alloc_request* request,
                        amdgpu_bo_handle* bo) = 0;
    /// amdgpu_bo_cpu_map.
    virtual int boCpuMap(amdgpu_bo_handle bo, void** cpu) = 0;
    /// amdgpu_bo_cpu_unmap.
    virtual int boCpuUnmap(amdgpu_bo_handle bo) = 0;
    /// amdgpu_bo_free.
    virtual int boFree(amdgpu_bo_handle bo) = 0;
    /// amdgpu_va_range_alloc in the general range.
    virtual int vaRangeAlloc(amdgpu_device_handle dev, uint64_t size, uint64_t alignment,
                             uint64_t* address, amdgpu_va_handle* range) = 0;
    /// amdgpu_va_range_free.
    virtual int vaRangeFree(amdgpu_va_handle range) = 0;
    /// amdgpu_bo_va_op.
    virtual int boVaOp(amdgpu_bo_handle bo, uint64_t offset, uint64_t size, uint64_t addr,
                       uint64_t flags, uint32_t ops) = 0;
    /// amdgpu_cs_ctx_create.
    virtual int ctxCreate(amdgpu_device_handle dev, amdgpu_context_handle* ctx) = 0;
    /// amdgpu_cs_ctx_free.
    virtual int ctxFree(amdgpu_context_handle ctx) = 0;
    /// amdgpu_bo_list_create.
    virtual int boListCreate(amdgpu_device_handle dev, uint32_t count, amdgpu_bo_handle* bos,
                             amdgpu_bo_list_handle* list) = 0;
    /// amdgpu_bo_list_destroy.
    virtual int boListDestroy(amdgpu_bo_list_handle list) = 0;
    /// amdgpu_cs_submit of one request.
    virtual int csSubmit(amdgpu_context_handle ctx, amdgpu_cs_request* request) = 0;
    /// amdgpu_cs_query_fence_status.
    virtual int fenceStatus(amdgpu_cs_fence* fence, uint64_t timeoutNs, uint32_t* expired) = 0;
};

/// The implementation that issues the real calls (only in the backend library).
std::shared_ptr<KernelInterface> makeRealKernel();

} // namespace drm
