#pragma once
/// \file
/// The libdrm_amdgpu calls of SDMA copies (sdma::Libdrm) through a fault sweep's plan
/// (fault_sweep.h), each named as libdrm names it.

#include "fault_sweep.h"

#include "sdma/libdrm.h"

namespace faultsweep {

class FaultingLibdrm final : public sdma::Libdrm {
public:
    FaultingLibdrm(sdma::Libdrm& inner, FaultPlan& plan) : inner_(inner), plan_(plan) {}

    int openRenderNode(const std::string& path) override {
        return faultable(plan_, "open", [&] { return inner_.openRenderNode(path); });
    }
    int closeRenderNode(int fd) override {
        return faultable(plan_, "close", [&] { return inner_.closeRenderNode(fd); });
    }
    int deviceInitialize(int fd, sdma::Device* dev) override {
        return faultable(plan_, "amdgpu_device_initialize",
                         [&] { return inner_.deviceInitialize(fd, dev); });
    }
    int deviceDeinitialize(sdma::Device dev) override {
        return faultable(plan_, "amdgpu_device_deinitialize",
                         [&] { return inner_.deviceDeinitialize(dev); });
    }
    int boImportDmabuf(sdma::Device dev, int dmabufFd, sdma::Bo* bo, uint64_t* size) override {
        return faultable(plan_, "amdgpu_bo_import",
                         [&] { return inner_.boImportDmabuf(dev, dmabufFd, bo, size); });
    }
    int boFromUserMem(sdma::Device dev, void* cpu, uint64_t size, sdma::Bo* bo) override {
        return faultable(plan_, "amdgpu_create_bo_from_user_mem",
                         [&] { return inner_.boFromUserMem(dev, cpu, size, bo); });
    }
    int boAllocGtt(sdma::Device dev, uint64_t size, sdma::Bo* bo) override {
        return faultable(plan_, "amdgpu_bo_alloc",
                         [&] { return inner_.boAllocGtt(dev, size, bo); });
    }
    int boCpuMap(sdma::Bo bo, void** cpu) override {
        return faultable(plan_, "amdgpu_bo_cpu_map", [&] { return inner_.boCpuMap(bo, cpu); });
    }
    int boCpuUnmap(sdma::Bo bo) override {
        return faultable(plan_, "amdgpu_bo_cpu_unmap", [&] { return inner_.boCpuUnmap(bo); });
    }
    int boFree(sdma::Bo bo) override {
        return faultable(plan_, "amdgpu_bo_free", [&] { return inner_.boFree(bo); });
    }
    int vaRangeAlloc(sdma::Device dev, uint64_t size, uint64_t alignment, uint64_t* va,
                     sdma::VaRange* range) override {
        return faultable(plan_, "amdgpu_va_range_alloc",
                         [&] { return inner_.vaRangeAlloc(dev, size, alignment, va, range); });
    }
    int vaRangeFree(sdma::VaRange range) override {
        return faultable(plan_, "amdgpu_va_range_free", [&] { return inner_.vaRangeFree(range); });
    }
    int boVaOp(sdma::Bo bo, uint64_t size, uint64_t va, bool map) override {
        // An unmap releases: amdgpu_bo_va_op(AMDGPU_VA_OP_UNMAP).
        return faultable(plan_, map ? "amdgpu_bo_va_op" : "amdgpu_bo_va_op(unmap)",
                         [&] { return inner_.boVaOp(bo, size, va, map); });
    }
    int ctxCreate(sdma::Device dev, sdma::Context* ctx) override {
        return faultable(plan_, "amdgpu_cs_ctx_create", [&] { return inner_.ctxCreate(dev, ctx); });
    }
    int ctxFree(sdma::Context ctx) override {
        return faultable(plan_, "amdgpu_cs_ctx_free", [&] { return inner_.ctxFree(ctx); });
    }
    int boListCreate(sdma::Device dev, const std::vector<sdma::Bo>& bos,
                     sdma::BoList* list) override {
        return faultable(plan_, "amdgpu_bo_list_create",
                         [&] { return inner_.boListCreate(dev, bos, list); });
    }
    int boListDestroy(sdma::BoList list) override {
        return faultable(plan_, "amdgpu_bo_list_destroy",
                         [&] { return inner_.boListDestroy(list); });
    }
    int submitSdma(sdma::Context ctx, sdma::BoList list, uint64_t ibVa, uint32_t ibDwords,
                   uint64_t* seq) override {
        return faultable(plan_, "amdgpu_cs_submit",
                         [&] { return inner_.submitSdma(ctx, list, ibVa, ibDwords, seq); });
    }
    int waitFence(sdma::Context ctx, uint64_t seq, uint64_t timeoutNs, bool* signaled) override {
        return faultable(plan_, "amdgpu_cs_query_fence_status",
                         [&] { return inner_.waitFence(ctx, seq, timeoutNs, signaled); });
    }

private:
    sdma::Libdrm& inner_;
    FaultPlan& plan_;
};

} // namespace faultsweep
