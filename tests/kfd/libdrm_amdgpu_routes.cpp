// libdrm_amdgpu's C API on an sdma::Libdrm (libdrm_amdgpu_routes.h): the amdgpu_* calls made on a
// render node of a fake KFD are served by the libdrm the program names for it, whose SDMA engine
// executes the copy packets submitted; calls on any other device go on to the real
// libdrm_amdgpu. AMD's thunk calls amdgpu_device_initialize only for a GPU's marketing name;
// CRIU's own amdgpu plugin copies BO contents with SDMA through the rest (its sdma_copy_bo).
#include "libdrm_amdgpu_routes.h"
#include "interposer_support.h"

#include <amdgpu.h>
#include <amdgpu_drm.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

using kfdinterpose::libdrmOfHandles;

namespace {

/// A handle given out for an object of the fake libdrm: the fake's own handle of it.
struct FakeHandle {
    uintptr_t value = 0;
    int fd = -1;       ///< devices: the render-node fd
    uint64_t size = 0; ///< BOs: their size (amdgpu_bo_va_op maps at most this much)
};

std::mutex& handlesMutex() {
    static std::mutex m;
    return m;
}
std::set<const void*>& handles() {
    static std::set<const void*> s;
    return s;
}

template <typename H> H made(uintptr_t value, int fd = -1, uint64_t size = 0) {
    auto* h = new FakeHandle{value, fd, size};
    std::lock_guard<std::mutex> lock(handlesMutex());
    handles().insert(h);
    return reinterpret_cast<H>(h);
}

/// The fake handle `h` stands for, or nullptr when it is a real libdrm_amdgpu handle.
template <typename H> FakeHandle* fake(H h) {
    std::lock_guard<std::mutex> lock(handlesMutex());
    return handles().count(h) ? reinterpret_cast<FakeHandle*>(h) : nullptr;
}

template <typename H> void forget(H h) {
    std::lock_guard<std::mutex> lock(handlesMutex());
    handles().erase(h);
    delete reinterpret_cast<FakeHandle*>(h);
}

template <typename Fn> Fn real(const char* name) {
    return kfdinterpose::nextDefinition<Fn>(name);
}

/// The libdrm of the handles given out (a fake handle exists only while it does).
sdma::Libdrm& drm() {
    return *libdrmOfHandles();
}

template <typename E> E as(const FakeHandle* h) {
    return static_cast<E>(h->value);
}

} // namespace

#define INTERPOSED __attribute__((visibility("default")))

extern "C" {

INTERPOSED int amdgpu_device_initialize(int fd, uint32_t* major, uint32_t* minor,
                                        amdgpu_device_handle* dev) {
    sdma::Libdrm* served = nullptr;
    int deviceFd = fd;
    if (int r = kfdinterpose::libdrmServingFd(fd, &served, &deviceFd); r < 0)
        return r;
    if (!served) {
        static auto next = real<int (*)(int, uint32_t*, uint32_t*, amdgpu_device_handle*)>(
            "amdgpu_device_initialize");
        return next(fd, major, minor, dev);
    }
    sdma::Device d{};
    if (int r = served->deviceInitialize(deviceFd, &d); r < 0)
        return r;
    *major = 3;
    *minor = 49;
    *dev = made<amdgpu_device_handle>(static_cast<uintptr_t>(d), fd);
    return 0;
}

INTERPOSED int amdgpu_device_deinitialize(amdgpu_device_handle dev) {
    if (FakeHandle* h = fake(dev)) {
        int r = libdrmOfHandles() ? drm().deviceDeinitialize(as<sdma::Device>(h)) : 0;
        forget(dev);
        return r;
    }
    static auto next = real<int (*)(amdgpu_device_handle)>("amdgpu_device_deinitialize");
    return next(dev);
}

INTERPOSED const char* amdgpu_get_marketing_name(amdgpu_device_handle dev) {
    if (fake(dev))
        return kfdinterpose::fakeMarketingName();
    static auto next = real<const char* (*)(amdgpu_device_handle)>("amdgpu_get_marketing_name");
    return next(dev);
}

INTERPOSED int amdgpu_query_gpu_info(amdgpu_device_handle dev, struct amdgpu_gpu_info* info) {
    if (fake(dev)) {
        // The fake machines' GPUs are gfx9 (MI210): family AI, whose SDMA copies up to 2 MiB a
        // packet.
        memset(info, 0, sizeof(*info));
        info->family_id = AMDGPU_FAMILY_AI;
        return 0;
    }
    static auto next =
        real<int (*)(amdgpu_device_handle, amdgpu_gpu_info*)>("amdgpu_query_gpu_info");
    return next(dev, info);
}

INTERPOSED int amdgpu_bo_alloc(amdgpu_device_handle dev, struct amdgpu_bo_alloc_request* req,
                               amdgpu_bo_handle* bo) {
    if (FakeHandle* h = fake(dev)) {
        if (req->preferred_heap != AMDGPU_GEM_DOMAIN_GTT)
            return -EINVAL; // the fake allocates CPU-visible GTT only (command buffers)
        sdma::Bo b{};
        if (int r = drm().boAllocGtt(as<sdma::Device>(h), req->alloc_size, &b); r < 0)
            return r;
        *bo = made<amdgpu_bo_handle>(static_cast<uintptr_t>(b), -1, req->alloc_size);
        return 0;
    }
    static auto next =
        real<int (*)(amdgpu_device_handle, amdgpu_bo_alloc_request*, amdgpu_bo_handle*)>(
            "amdgpu_bo_alloc");
    return next(dev, req, bo);
}

INTERPOSED int amdgpu_bo_import(amdgpu_device_handle dev, enum amdgpu_bo_handle_type type,
                                uint32_t shared, struct amdgpu_bo_import_result* out) {
    if (FakeHandle* h = fake(dev)) {
        if (type != amdgpu_bo_handle_type_dma_buf_fd)
            return -EINVAL;
        sdma::Bo b{};
        uint64_t size = 0;
        if (int r = drm().boImportDmabuf(as<sdma::Device>(h), static_cast<int>(shared), &b, &size);
            r < 0)
            return r;
        out->buf_handle = made<amdgpu_bo_handle>(static_cast<uintptr_t>(b), -1, size);
        out->alloc_size = size;
        return 0;
    }
    static auto next = real<int (*)(amdgpu_device_handle, amdgpu_bo_handle_type, uint32_t,
                                    amdgpu_bo_import_result*)>("amdgpu_bo_import");
    return next(dev, type, shared, out);
}

INTERPOSED int amdgpu_create_bo_from_user_mem(amdgpu_device_handle dev, void* cpu, uint64_t size,
                                              amdgpu_bo_handle* bo) {
    if (FakeHandle* h = fake(dev)) {
        sdma::Bo b{};
        if (int r = drm().boFromUserMem(as<sdma::Device>(h), cpu, size, &b); r < 0)
            return r;
        *bo = made<amdgpu_bo_handle>(static_cast<uintptr_t>(b), -1, size);
        return 0;
    }
    static auto next = real<int (*)(amdgpu_device_handle, void*, uint64_t, amdgpu_bo_handle*)>(
        "amdgpu_create_bo_from_user_mem");
    return next(dev, cpu, size, bo);
}

INTERPOSED int amdgpu_bo_cpu_map(amdgpu_bo_handle bo, void** cpu) {
    if (FakeHandle* h = fake(bo))
        return drm().boCpuMap(as<sdma::Bo>(h), cpu);
    static auto next = real<int (*)(amdgpu_bo_handle, void**)>("amdgpu_bo_cpu_map");
    return next(bo, cpu);
}

INTERPOSED int amdgpu_bo_cpu_unmap(amdgpu_bo_handle bo) {
    if (FakeHandle* h = fake(bo))
        return drm().boCpuUnmap(as<sdma::Bo>(h));
    static auto next = real<int (*)(amdgpu_bo_handle)>("amdgpu_bo_cpu_unmap");
    return next(bo);
}

INTERPOSED int amdgpu_bo_free(amdgpu_bo_handle bo) {
    if (FakeHandle* h = fake(bo)) {
        int r = drm().boFree(as<sdma::Bo>(h));
        forget(bo);
        return r;
    }
    static auto next = real<int (*)(amdgpu_bo_handle)>("amdgpu_bo_free");
    return next(bo);
}

INTERPOSED int amdgpu_va_range_alloc(amdgpu_device_handle dev, enum amdgpu_gpu_va_range type,
                                     uint64_t size, uint64_t alignment, uint64_t required,
                                     uint64_t* va, amdgpu_va_handle* range, uint64_t flags) {
    if (FakeHandle* h = fake(dev)) {
        if (type != amdgpu_gpu_va_range_general || required || flags)
            return -EINVAL; // the fake reserves in the general range, wherever it likes
        sdma::VaRange r{};
        if (int e = drm().vaRangeAlloc(as<sdma::Device>(h), size, alignment, va, &r); e < 0)
            return e;
        *range = made<amdgpu_va_handle>(static_cast<uintptr_t>(r));
        return 0;
    }
    static auto next =
        real<int (*)(amdgpu_device_handle, amdgpu_gpu_va_range, uint64_t, uint64_t, uint64_t,
                     uint64_t*, amdgpu_va_handle*, uint64_t)>("amdgpu_va_range_alloc");
    return next(dev, type, size, alignment, required, va, range, flags);
}

INTERPOSED int amdgpu_va_range_free(amdgpu_va_handle range) {
    if (FakeHandle* h = fake(range)) {
        int r = drm().vaRangeFree(as<sdma::VaRange>(h));
        forget(range);
        return r;
    }
    static auto next = real<int (*)(amdgpu_va_handle)>("amdgpu_va_range_free");
    return next(range);
}

INTERPOSED int amdgpu_bo_va_op(amdgpu_bo_handle bo, uint64_t offset, uint64_t size, uint64_t addr,
                               uint64_t flags, uint32_t ops) {
    if (FakeHandle* h = fake(bo)) {
        if (offset || (ops != AMDGPU_VA_OP_MAP && ops != AMDGPU_VA_OP_UNMAP))
            return -EINVAL;
        (void)flags;
        return drm().boVaOp(as<sdma::Bo>(h), size, addr, ops == AMDGPU_VA_OP_MAP);
    }
    static auto next =
        real<int (*)(amdgpu_bo_handle, uint64_t, uint64_t, uint64_t, uint64_t, uint32_t)>(
            "amdgpu_bo_va_op");
    return next(bo, offset, size, addr, flags, ops);
}

INTERPOSED int amdgpu_bo_list_create(amdgpu_device_handle dev, uint32_t n,
                                     amdgpu_bo_handle* resources, uint8_t* priorities,
                                     amdgpu_bo_list_handle* list) {
    if (FakeHandle* h = fake(dev)) {
        std::vector<sdma::Bo> bos;
        for (uint32_t i = 0; i < n; ++i) {
            FakeHandle* b = fake(resources[i]);
            if (!b)
                return -EINVAL;
            bos.push_back(as<sdma::Bo>(b));
        }
        sdma::BoList l{};
        if (int r = drm().boListCreate(as<sdma::Device>(h), bos, &l); r < 0)
            return r;
        *list = made<amdgpu_bo_list_handle>(static_cast<uintptr_t>(l));
        return 0;
    }
    static auto next = real<int (*)(amdgpu_device_handle, uint32_t, amdgpu_bo_handle*, uint8_t*,
                                    amdgpu_bo_list_handle*)>("amdgpu_bo_list_create");
    return next(dev, n, resources, priorities, list);
}

INTERPOSED int amdgpu_bo_list_destroy(amdgpu_bo_list_handle list) {
    if (FakeHandle* h = fake(list)) {
        int r = drm().boListDestroy(as<sdma::BoList>(h));
        forget(list);
        return r;
    }
    static auto next = real<int (*)(amdgpu_bo_list_handle)>("amdgpu_bo_list_destroy");
    return next(list);
}

INTERPOSED int amdgpu_cs_ctx_create(amdgpu_device_handle dev, amdgpu_context_handle* ctx) {
    if (FakeHandle* h = fake(dev)) {
        sdma::Context c{};
        if (int r = drm().ctxCreate(as<sdma::Device>(h), &c); r < 0)
            return r;
        *ctx = made<amdgpu_context_handle>(static_cast<uintptr_t>(c));
        return 0;
    }
    static auto next =
        real<int (*)(amdgpu_device_handle, amdgpu_context_handle*)>("amdgpu_cs_ctx_create");
    return next(dev, ctx);
}

INTERPOSED int amdgpu_cs_ctx_free(amdgpu_context_handle ctx) {
    if (FakeHandle* h = fake(ctx)) {
        int r = drm().ctxFree(as<sdma::Context>(h));
        forget(ctx);
        return r;
    }
    static auto next = real<int (*)(amdgpu_context_handle)>("amdgpu_cs_ctx_free");
    return next(ctx);
}

INTERPOSED int amdgpu_cs_submit(amdgpu_context_handle ctx, uint64_t flags,
                                struct amdgpu_cs_request* reqs, uint32_t n) {
    if (FakeHandle* h = fake(ctx)) {
        // What the fake engine runs: one IB on SDMA ring 0 per request, with a BO list.
        for (uint32_t i = 0; i < n; ++i) {
            amdgpu_cs_request& q = reqs[i];
            FakeHandle* list = fake(q.resources);
            if (q.ip_type != AMDGPU_HW_IP_DMA || q.ring != 0 || q.number_of_ibs != 1 || !list)
                return -EINVAL;
            if (int r = drm().submitSdma(as<sdma::Context>(h), as<sdma::BoList>(list),
                                         q.ibs[0].ib_mc_address, q.ibs[0].size, &q.seq_no);
                r < 0)
                return r;
        }
        return 0;
    }
    static auto next = real<int (*)(amdgpu_context_handle, uint64_t, amdgpu_cs_request*, uint32_t)>(
        "amdgpu_cs_submit");
    return next(ctx, flags, reqs, n);
}

INTERPOSED int amdgpu_cs_query_fence_status(struct amdgpu_cs_fence* fence, uint64_t timeoutNs,
                                            uint64_t flags, uint32_t* expired) {
    if (FakeHandle* h = fake(fence->context)) {
        if (fence->ip_type != AMDGPU_HW_IP_DMA || fence->ring != 0 || flags)
            return -EINVAL;
        bool signaled = false;
        if (int r = drm().waitFence(as<sdma::Context>(h), fence->fence, timeoutNs, &signaled);
            r < 0)
            return r;
        *expired = signaled ? 1 : 0;
        return 0;
    }
    static auto next = real<int (*)(amdgpu_cs_fence*, uint64_t, uint64_t, uint32_t*)>(
        "amdgpu_cs_query_fence_status");
    return next(fence, timeoutNs, flags, expired);
}

} // extern "C"
