// The real KernelInterface: one system call or libdrm_amdgpu call per method, nothing else.
// It is the only part of the backend tests cannot run; keep it that way.
#include "kernel_interface.h"

#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace drm {
namespace {

class RealKernel final : public KernelInterface {
public:
    int open(const std::string& path) override {
        int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        return fd >= 0 ? fd : -errno;
    }
    void close(int fd) override { ::close(fd); }
    int dup(int fd) override {
        int r = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        return r >= 0 ? r : -errno;
    }
    int ioctl(int fd, unsigned long request, void* arg) override {
        int r;
        do {
            r = ::ioctl(fd, request, arg);
        } while (r == -1 && (errno == EINTR || errno == EAGAIN));
        return r == 0 ? 0 : -errno;
    }
    int fstat(int fd, struct stat* st) override { return ::fstat(fd, st) == 0 ? 0 : -errno; }
    void* mmap(int fd, uint64_t offset, uint64_t size, int prot, int* err) override {
        void* p = ::mmap(nullptr, size, prot, MAP_SHARED, fd, static_cast<off_t>(offset));
        if (p != MAP_FAILED)
            return p;
        *err = errno;
        return nullptr;
    }
    void munmap(void* addr, uint64_t size) override { ::munmap(addr, size); }
    int pidGetFd(int pid, int targetFd) override {
        int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
        if (pidfd < 0)
            return -errno;
        int fd = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, targetFd, 0));
        int err = errno;
        ::close(pidfd);
        return fd >= 0 ? fd : -err;
    }
    int kcmpFiles(int pid1, int fd1, int pid2, int fd2) override {
        long r = ::syscall(SYS_kcmp, pid1, pid2, KCMP_FILE, fd1, fd2);
        return r >= 0 ? static_cast<int>(r) : -errno;
    }
    int selfPid() override { return ::getpid(); }

    int deviceInitialize(int fd, amdgpu_device_handle* dev) override {
        uint32_t major = 0, minor = 0;
        return amdgpu_device_initialize(fd, &major, &minor, dev);
    }
    int deviceDeinitialize(amdgpu_device_handle dev) override {
        return amdgpu_device_deinitialize(dev);
    }
    int boImportDmabuf(amdgpu_device_handle dev, int dmabufFd, amdgpu_bo_handle* bo) override {
        amdgpu_bo_import_result result{};
        int r = amdgpu_bo_import(dev, amdgpu_bo_handle_type_dma_buf_fd,
                                 static_cast<uint32_t>(dmabufFd), &result);
        *bo = result.buf_handle;
        return r;
    }
    int boFromUserMem(amdgpu_device_handle dev, void* cpu, uint64_t size,
                      amdgpu_bo_handle* bo) override {
        return amdgpu_create_bo_from_user_mem(dev, cpu, size, bo);
    }
    int boAlloc(amdgpu_device_handle dev, amdgpu_bo_alloc_request* request,
                amdgpu_bo_handle* bo) override {
        return amdgpu_bo_alloc(dev, request, bo);
    }
    int boCpuMap(amdgpu_bo_handle bo, void** cpu) override { return amdgpu_bo_cpu_map(bo, cpu); }
    int boCpuUnmap(amdgpu_bo_handle bo) override { return amdgpu_bo_cpu_unmap(bo); }
    int boFree(amdgpu_bo_handle bo) override { return amdgpu_bo_free(bo); }
    int vaRangeAlloc(amdgpu_device_handle dev, uint64_t size, uint64_t alignment,
                     uint64_t* address, amdgpu_va_handle* range) override {
        return amdgpu_va_range_alloc(dev, amdgpu_gpu_va_range_general, size, alignment, 0,
                                     address, range, 0);
    }
    int vaRangeFree(amdgpu_va_handle range) override { return amdgpu_va_range_free(range); }
    int boVaOp(amdgpu_bo_handle bo, uint64_t offset, uint64_t size, uint64_t addr,
               uint64_t flags, uint32_t ops) override {
        return amdgpu_bo_va_op(bo, offset, size, addr, flags, ops);
    }
    int ctxCreate(amdgpu_device_handle dev, amdgpu_context_handle* ctx) override {
        return amdgpu_cs_ctx_create(dev, ctx);
    }
    int ctxFree(amdgpu_context_handle ctx) override { return amdgpu_cs_ctx_free(ctx); }
    int boListCreate(amdgpu_device_handle dev, uint32_t count, amdgpu_bo_handle* bos,
                     amdgpu_bo_list_handle* list) override {
        return amdgpu_bo_list_create(dev, count, bos, nullptr, list);
    }
    int boListDestroy(amdgpu_bo_list_handle list) override { return amdgpu_bo_list_destroy(list); }
    int csSubmit(amdgpu_context_handle ctx, amdgpu_cs_request* request) override {
        return amdgpu_cs_submit(ctx, 0, request, 1);
    }
    int fenceStatus(amdgpu_cs_fence* fence, uint64_t timeoutNs, uint32_t* expired) override {
        return amdgpu_cs_query_fence_status(fence, timeoutNs, 0, expired);
    }
};

} // namespace

std::shared_ptr<KernelInterface> makeRealKernel() { return std::make_shared<RealKernel>(); }

} // namespace drm
