// The real Libdrm: one libdrm_amdgpu call per method, nothing else.
#include "sdma/real_libdrm.h"

#include <amdgpu.h>
#include <amdgpu_drm.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace sdma {
namespace {

template <typename H, typename E> H toHandle(E e) {
    return reinterpret_cast<H>(e);
}
template <typename E, typename H> E fromHandle(H h) {
    return static_cast<E>(reinterpret_cast<uintptr_t>(h));
}

class RealLibdrm final : public Libdrm {
public:
    int openRenderNode(const std::string& path) override {
        int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        return fd >= 0 ? fd : -errno;
    }
    int closeRenderNode(int fd) override { return ::close(fd) == 0 ? 0 : -errno; }
    int deviceInitialize(int fd, Device* dev) override {
        uint32_t major = 0, minor = 0;
        amdgpu_device_handle h = nullptr;
        int r = amdgpu_device_initialize(fd, &major, &minor, &h);
        *dev = fromHandle<Device>(h);
        return r;
    }
    int deviceDeinitialize(Device dev) override {
        return amdgpu_device_deinitialize(toHandle<amdgpu_device_handle>(dev));
    }
    int boImportDmabuf(Device dev, int dmabufFd, Bo* bo, uint64_t* size) override {
        amdgpu_bo_import_result res = {};
        int r =
            amdgpu_bo_import(toHandle<amdgpu_device_handle>(dev), amdgpu_bo_handle_type_dma_buf_fd,
                             static_cast<uint32_t>(dmabufFd), &res);
        *bo = fromHandle<Bo>(res.buf_handle);
        *size = res.alloc_size;
        return r;
    }
    int boFromUserMem(Device dev, void* cpu, uint64_t size, Bo* bo) override {
        amdgpu_bo_handle h = nullptr;
        int r = amdgpu_create_bo_from_user_mem(toHandle<amdgpu_device_handle>(dev), cpu, size, &h);
        *bo = fromHandle<Bo>(h);
        return r;
    }
    int boAllocGtt(Device dev, uint64_t size, Bo* bo) override {
        amdgpu_bo_alloc_request req = {};
        req.alloc_size = size;
        req.phys_alignment = 4096;
        req.preferred_heap = AMDGPU_GEM_DOMAIN_GTT;
        amdgpu_bo_handle h = nullptr;
        int r = amdgpu_bo_alloc(toHandle<amdgpu_device_handle>(dev), &req, &h);
        *bo = fromHandle<Bo>(h);
        return r;
    }
    int boCpuMap(Bo bo, void** cpu) override {
        return amdgpu_bo_cpu_map(toHandle<amdgpu_bo_handle>(bo), cpu);
    }
    int boCpuUnmap(Bo bo) override { return amdgpu_bo_cpu_unmap(toHandle<amdgpu_bo_handle>(bo)); }
    int boFree(Bo bo) override { return amdgpu_bo_free(toHandle<amdgpu_bo_handle>(bo)); }
    int vaRangeAlloc(Device dev, uint64_t size, uint64_t alignment, uint64_t* va,
                     VaRange* range) override {
        amdgpu_va_handle h = nullptr;
        int r = amdgpu_va_range_alloc(toHandle<amdgpu_device_handle>(dev),
                                      amdgpu_gpu_va_range_general, size, alignment, 0, va, &h, 0);
        *range = fromHandle<VaRange>(h);
        return r;
    }
    int vaRangeFree(VaRange range) override {
        return amdgpu_va_range_free(toHandle<amdgpu_va_handle>(range));
    }
    int boVaOp(Bo bo, uint64_t size, uint64_t va, bool map) override {
        return amdgpu_bo_va_op(toHandle<amdgpu_bo_handle>(bo), 0, size, va, 0,
                               map ? AMDGPU_VA_OP_MAP : AMDGPU_VA_OP_UNMAP);
    }
    int ctxCreate(Device dev, Context* ctx) override {
        amdgpu_context_handle h = nullptr;
        int r = amdgpu_cs_ctx_create(toHandle<amdgpu_device_handle>(dev), &h);
        *ctx = fromHandle<Context>(h);
        return r;
    }
    int ctxFree(Context ctx) override {
        return amdgpu_cs_ctx_free(toHandle<amdgpu_context_handle>(ctx));
    }
    int boListCreate(Device dev, const std::vector<Bo>& bos, BoList* list) override {
        std::vector<amdgpu_bo_handle> handles;
        for (Bo b : bos)
            handles.push_back(toHandle<amdgpu_bo_handle>(b));
        amdgpu_bo_list_handle h = nullptr;
        int r = amdgpu_bo_list_create(toHandle<amdgpu_device_handle>(dev),
                                      static_cast<uint32_t>(handles.size()), handles.data(),
                                      nullptr, &h);
        *list = fromHandle<BoList>(h);
        return r;
    }
    int boListDestroy(BoList list) override {
        return amdgpu_bo_list_destroy(toHandle<amdgpu_bo_list_handle>(list));
    }
    int submitSdma(Context ctx, BoList list, uint64_t ibVa, uint32_t ibDwords,
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
    int waitFence(Context ctx, uint64_t seq, uint64_t timeoutNs, bool* signaled) override {
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

std::unique_ptr<Libdrm> makeRealLibdrm() {
    return std::make_unique<RealLibdrm>();
}

} // namespace sdma
