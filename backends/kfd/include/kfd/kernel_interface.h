#pragma once
/// \file
/// The one boundary between the KFD backend and the machine: every system call, ioctl and
/// libdrm_amdgpu call the backend makes goes through KernelInterface. The real implementation
/// (real_kernel.cpp) is a few lines per call; tests substitute a stateful fake that implements the
/// same semantics on the same structs, so every decision above this line runs in tests.
///
/// Convention: calls return 0 (or a non-negative fd) on success and a negative errno on failure,
/// as the kernel and libdrm do.

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kfd {

/// Opaque libdrm_amdgpu handles (amdgpu_device_handle, amdgpu_bo_handle, ...), as integers so
/// that a fake can hand out its own.
enum class DrmDevice : uintptr_t {};
/// A buffer object of a DrmDevice (amdgpu_bo_handle).
enum class DrmBo : uintptr_t {};
/// A GPU virtual address range reservation (amdgpu_va_handle).
enum class DrmVaRange : uintptr_t {};
/// A command submission context (amdgpu_context_handle).
enum class DrmContext : uintptr_t {};
/// A list of BOs a submission uses (amdgpu_bo_list_handle).
enum class DrmBoList : uintptr_t {};

/// One entry of /proc/<pid>/fd: the fd number and what stat() says of its target.
struct ProcFd {
    int fd = -1;
    struct stat st {};
};

/// Every call the backend makes into the kernel or libdrm_amdgpu.
class KernelInterface {
public:
    virtual ~KernelInterface() = default;

    // ------------------------------------------------------------------ files and ioctls
    /// open(2): an fd or -errno.
    virtual int open(const std::string& path, int flags) = 0;
    /// close(2): 0 or -errno.
    virtual int close(int fd) = 0;
    /// fcntl(F_DUPFD_CLOEXEC): a new fd for the same open file, or -errno.
    virtual int dup(int fd) = 0;
    /// ioctl(2): 0 or -errno. `arg` points at the request's struct.
    virtual int ioctl(int fd, unsigned long request, void* arg) = 0;
    /// stat(2) of a path: 0 or -errno.
    virtual int stat(const std::string& path, struct stat* st) = 0;
    /// fstat(2): 0 or -errno.
    virtual int fstat(int fd, struct stat* st) = 0;
    /// kcmp(KCMP_FILE) of two fds of this process: 1 when they are the same open file, 0 when
    /// not, -errno on failure.
    virtual int sameFile(int fdA, int fdB) = 0;

    // ---------------------------------------------------------------------- processes
    /// The pids of /proc (host pid namespace): 0 or -errno.
    virtual int listPids(std::vector<int>* pids) = 0;
    /// The fds of /proc/<pid>/fd with the stat of each target: 0 or -errno.
    virtual int listProcessFds(int pid, std::vector<ProcFd>* fds) = 0;
    /// pidfd_getfd(2): this process's copy of fd `targetFd` of `pid`, or -errno.
    virtual int pidGetFd(int pid, int targetFd) = 0;

    // ---------------------------------------------------------------- libdrm_amdgpu
    /// amdgpu_device_initialize on a render-node fd.
    virtual int deviceInitialize(int fd, DrmDevice* dev) = 0;
    /// amdgpu_device_deinitialize.
    virtual int deviceDeinitialize(DrmDevice dev) = 0;
    /// amdgpu_bo_import of a dmabuf fd; `size` receives the BO's allocation size.
    virtual int boImportDmabuf(DrmDevice dev, int dmabufFd, DrmBo* bo, uint64_t* size) = 0;
    /// amdgpu_create_bo_from_user_mem (`cpu` page aligned, `size` a page multiple).
    virtual int boFromUserMem(DrmDevice dev, void* cpu, uint64_t size, DrmBo* bo) = 0;
    /// amdgpu_bo_alloc of a CPU-accessible GTT BO (command buffers).
    virtual int boAllocGtt(DrmDevice dev, uint64_t size, DrmBo* bo) = 0;
    /// amdgpu_bo_cpu_map.
    virtual int boCpuMap(DrmBo bo, void** cpu) = 0;
    /// amdgpu_bo_cpu_unmap.
    virtual int boCpuUnmap(DrmBo bo) = 0;
    /// amdgpu_bo_free.
    virtual int boFree(DrmBo bo) = 0;
    /// amdgpu_va_range_alloc in the general range.
    virtual int vaRangeAlloc(DrmDevice dev, uint64_t size, uint64_t alignment, uint64_t* va,
                             DrmVaRange* range) = 0;
    /// amdgpu_va_range_free.
    virtual int vaRangeFree(DrmVaRange range) = 0;
    /// amdgpu_bo_va_op: maps (or unmaps) `size` bytes of `bo` at `va`, readable and writable.
    virtual int boVaOp(DrmBo bo, uint64_t size, uint64_t va, bool map) = 0;
    /// amdgpu_cs_ctx_create.
    virtual int ctxCreate(DrmDevice dev, DrmContext* ctx) = 0;
    /// amdgpu_cs_ctx_free.
    virtual int ctxFree(DrmContext ctx) = 0;
    /// amdgpu_bo_list_create.
    virtual int boListCreate(DrmDevice dev, const std::vector<DrmBo>& bos, DrmBoList* list) = 0;
    /// amdgpu_bo_list_destroy.
    virtual int boListDestroy(DrmBoList list) = 0;
    /// amdgpu_cs_submit of one IB (`ibDwords` dwords at GPU VA `ibVa`) on the SDMA ring 0;
    /// `seq` receives the fence sequence number.
    virtual int submitSdma(DrmContext ctx, DrmBoList list, uint64_t ibVa, uint32_t ibDwords,
                           uint64_t* seq) = 0;
    /// amdgpu_cs_query_fence_status of an SDMA submission: `signaled` says whether it completed.
    virtual int waitFence(DrmContext ctx, uint64_t seq, uint64_t timeoutNs, bool* signaled) = 0;
};

/// An fd of a KernelInterface closed when the object goes away.
class KernelFd {
public:
    KernelFd() = default;
    KernelFd(KernelInterface* kernel, int fd) : kernel_(kernel), fd_(fd) {}
    ~KernelFd() { reset(); }
    KernelFd(KernelFd&& other) noexcept : kernel_(other.kernel_), fd_(other.release()) {}
    KernelFd& operator=(KernelFd&& other) noexcept {
        if (this != &other) {
            reset();
            kernel_ = other.kernel_;
            fd_ = other.release();
        }
        return *this;
    }
    KernelFd(const KernelFd&) = delete;
    KernelFd& operator=(const KernelFd&) = delete;

    /// The fd, -1 when empty.
    int get() const { return fd_; }
    /// True when it holds an fd.
    bool valid() const { return fd_ >= 0; }
    /// Gives up ownership.
    int release() {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }
    /// Closes the fd (if any).
    void reset() {
        if (fd_ >= 0 && kernel_)
            kernel_->close(fd_);
        fd_ = -1;
    }

private:
    KernelInterface* kernel_ = nullptr;
    int fd_ = -1;
};

} // namespace kfd
