#include "kfd/real_kernel.h"

#include <amdgpu.h>
#include <amdgpu_drm.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace kfd {
namespace {

int negErrno(int r) { return r < 0 ? -errno : r; }

template <typename H, typename E> H toHandle(E e) { return reinterpret_cast<H>(e); }
template <typename E, typename H> E fromHandle(H h) { return static_cast<E>(reinterpret_cast<uintptr_t>(h)); }

class RealKernel final : public KernelInterface {
public:
    int open(const std::string& path, int flags) override {
        return negErrno(::open(path.c_str(), flags | O_CLOEXEC));
    }
    int close(int fd) override { return negErrno(::close(fd)); }
    int dup(int fd) override { return negErrno(fcntl(fd, F_DUPFD_CLOEXEC, 0)); }
    int ioctl(int fd, unsigned long request, void* arg) override {
        int r;
        do {
            r = ::ioctl(fd, request, arg);
        } while (r < 0 && (errno == EINTR || errno == EAGAIN));
        return negErrno(r);
    }
    int stat(const std::string& path, struct stat* st) override {
        return negErrno(::stat(path.c_str(), st));
    }
    int fstat(int fd, struct stat* st) override { return negErrno(::fstat(fd, st)); }
    int sameFile(int fdA, int fdB) override {
        long r = syscall(SYS_kcmp, getpid(), getpid(), KCMP_FILE, fdA, fdB);
        return r < 0 ? -errno : (r == 0 ? 1 : 0);
    }
    int listPids(std::vector<int>* pids) override {
        DIR* d = opendir("/proc");
        if (!d)
            return -errno;
        while (struct dirent* e = readdir(d))
            if (int pid = atoi(e->d_name); pid > 0)
                pids->push_back(pid);
        closedir(d);
        return 0;
    }
    int listProcessFds(int pid, std::vector<ProcFd>* fds) override {
        std::string dir = "/proc/" + std::to_string(pid) + "/fd";
        DIR* d = opendir(dir.c_str());
        if (!d)
            return -errno;
        while (struct dirent* e = readdir(d)) {
            ProcFd f;
            if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &f.st, 0) != 0)
                continue;
            f.fd = atoi(e->d_name);
            fds->push_back(f);
        }
        closedir(d);
        return 0;
    }
    int pidGetFd(int pid, int targetFd) override {
        int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
        if (pidfd < 0)
            return -errno;
        int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, targetFd, 0));
        int err = errno;
        ::close(pidfd);
        return fd < 0 ? -err : fd;
    }

    int deviceInitialize(int fd, DrmDevice* dev) override {
        uint32_t major = 0, minor = 0;
        amdgpu_device_handle h = nullptr;
        int r = amdgpu_device_initialize(fd, &major, &minor, &h);
        *dev = fromHandle<DrmDevice>(h);
        return r;
    }
    int deviceDeinitialize(DrmDevice dev) override {
        return amdgpu_device_deinitialize(toHandle<amdgpu_device_handle>(dev));
    }
    int boImportDmabuf(DrmDevice dev, int dmabufFd, DrmBo* bo, uint64_t* size) override {
        amdgpu_bo_import_result res = {};
        int r = amdgpu_bo_import(toHandle<amdgpu_device_handle>(dev),
                                 amdgpu_bo_handle_type_dma_buf_fd, dmabufFd, &res);
        *bo = fromHandle<DrmBo>(res.buf_handle);
        *size = res.alloc_size;
        return r;
    }
    int boFromUserMem(DrmDevice dev, void* cpu, uint64_t size, DrmBo* bo) override {
        amdgpu_bo_handle h = nullptr;
        int r = amdgpu_create_bo_from_user_mem(toHandle<amdgpu_device_handle>(dev), cpu, size, &h);
        *bo = fromHandle<DrmBo>(h);
        return r;
    }
    int boAllocGtt(DrmDevice dev, uint64_t size, DrmBo* bo) override {
        amdgpu_bo_alloc_request req = {};
        req.alloc_size = size;
        req.phys_alignment = 4096;
        req.preferred_heap = AMDGPU_GEM_DOMAIN_GTT;
        amdgpu_bo_handle h = nullptr;
        int r = amdgpu_bo_alloc(toHandle<amdgpu_device_handle>(dev), &req, &h);
        *bo = fromHandle<DrmBo>(h);
        return r;
    }
    int boCpuMap(DrmBo bo, void** cpu) override {
        return amdgpu_bo_cpu_map(toHandle<amdgpu_bo_handle>(bo), cpu);
    }
    int boCpuUnmap(DrmBo bo) override { return amdgpu_bo_cpu_unmap(toHandle<amdgpu_bo_handle>(bo)); }
    int boFree(DrmBo bo) override { return amdgpu_bo_free(toHandle<amdgpu_bo_handle>(bo)); }
    int vaRangeAlloc(DrmDevice dev, uint64_t size, uint64_t alignment, uint64_t* va,
                     DrmVaRange* range) override {
        amdgpu_va_handle h = nullptr;
        int r = amdgpu_va_range_alloc(toHandle<amdgpu_device_handle>(dev),
                                      amdgpu_gpu_va_range_general, size, alignment, 0, va, &h, 0);
        *range = fromHandle<DrmVaRange>(h);
        return r;
    }
    int vaRangeFree(DrmVaRange range) override {
        return amdgpu_va_range_free(toHandle<amdgpu_va_handle>(range));
    }
    int boVaOp(DrmBo bo, uint64_t size, uint64_t va, bool map) override {
        return amdgpu_bo_va_op(toHandle<amdgpu_bo_handle>(bo), 0, size, va, 0,
                               map ? AMDGPU_VA_OP_MAP : AMDGPU_VA_OP_UNMAP);
    }
    int ctxCreate(DrmDevice dev, DrmContext* ctx) override {
        amdgpu_context_handle h = nullptr;
        int r = amdgpu_cs_ctx_create(toHandle<amdgpu_device_handle>(dev), &h);
        *ctx = fromHandle<DrmContext>(h);
        return r;
    }
    int ctxFree(DrmContext ctx) override { return amdgpu_cs_ctx_free(toHandle<amdgpu_context_handle>(ctx)); }
    int boListCreate(DrmDevice dev, const std::vector<DrmBo>& bos, DrmBoList* list) override {
        std::vector<amdgpu_bo_handle> handles;
        for (DrmBo b : bos)
            handles.push_back(toHandle<amdgpu_bo_handle>(b));
        amdgpu_bo_list_handle h = nullptr;
        int r = amdgpu_bo_list_create(toHandle<amdgpu_device_handle>(dev),
                                      static_cast<uint32_t>(handles.size()), handles.data(),
                                      nullptr, &h);
        *list = fromHandle<DrmBoList>(h);
        return r;
    }
    int boListDestroy(DrmBoList list) override {
        return amdgpu_bo_list_destroy(toHandle<amdgpu_bo_list_handle>(list));
    }
    int submitSdma(DrmContext ctx, DrmBoList list, uint64_t ibVa, uint32_t ibDwords,
                   uint64_t* seq) override {
        amdgpu_cs_ib_info ib = {};
        ib.ib_mc_address = ibVa;
        ib.size = ibDwords;
        amdgpu_cs_request req = {};
        req.ip_type = AMDGPU_HW_IP_DMA;
        req.resources = toHandle<amdgpu_bo_list_handle>(list);
        req.number_of_ibs = 1;
        req.ibs = &ib;
        int r = amdgpu_cs_submit(toHandle<amdgpu_context_handle>(ctx), 0, &req, 1);
        *seq = req.seq_no;
        return r;
    }
    int waitFence(DrmContext ctx, uint64_t seq, uint64_t timeoutNs, bool* signaled) override {
        amdgpu_cs_fence fence = {};
        fence.context = toHandle<amdgpu_context_handle>(ctx);
        fence.ip_type = AMDGPU_HW_IP_DMA;
        fence.fence = seq;
        uint32_t expired = 0;
        int r = amdgpu_cs_query_fence_status(&fence, timeoutNs, 0, &expired);
        *signaled = expired != 0;
        return r;
    }
};

} // namespace

std::unique_ptr<KernelInterface> makeRealKernel() { return std::make_unique<RealKernel>(); }

} // namespace kfd
