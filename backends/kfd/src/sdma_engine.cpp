#include "kfd/sdma_engine.h"

#include "hal/log.h"
#include "hal/topology.h"
#include "kfd/sdma_packets.h"

#include <fcntl.h>

#include <cstring>
#include <vector>

namespace kfd {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kFenceTimeoutNs = 30ull * 1000 * 1000 * 1000;

uint64_t pageAlign(uint64_t n) { return (n + kPage - 1) / kPage * kPage; }

hal::Error drmError(int r, uint32_t gpuId, const char* what) {
    return hal::makeErrnoError(hal::ErrorCode::Kernel, -r, "GPU %s: %s failed",
                               hal::gpuIdHex(gpuId).c_str(), what);
}

} // namespace

SdmaEngine::SdmaEngine(KernelInterface& kernel, uint32_t gpuId, uint64_t stagingBytes)
    : kernel_(kernel), gpuId_(gpuId), staging_(std::max<uint64_t>(stagingBytes, 2 * kPage)) {
    halfSize_ = staging_.capacity() / 2 / kPage * kPage;
}

hal::Result<std::unique_ptr<SdmaEngine>> SdmaEngine::open(KernelInterface& kernel,
                                                         const std::string& renderPath,
                                                         uint32_t gpuId, uint64_t stagingBytes) {
    std::unique_ptr<SdmaEngine> engine(new SdmaEngine(kernel, gpuId, stagingBytes));
    HAL_TRY(engine->setUp(renderPath));
    return engine;
}

hal::Result<void> SdmaEngine::setUp(const std::string& renderPath) {
    int fd = kernel_.open(renderPath, O_RDWR);
    if (fd < 0)
        return hal::makeErrnoError(hal::ErrorCode::Kernel, -fd,
                                   "GPU %s: cannot open render node %s for SDMA copies",
                                   hal::gpuIdHex(gpuId_).c_str(), renderPath.c_str());
    renderFd_ = KernelFd(&kernel_, fd);
    int r = kernel_.deviceInitialize(fd, &dev_);
    if (r < 0)
        return drmError(r, gpuId_, "amdgpu_device_initialize");
    haveDevice_ = true;
    if ((r = kernel_.ctxCreate(dev_, &ctx_)) < 0)
        return drmError(r, gpuId_, "amdgpu_cs_ctx_create");
    haveCtx_ = true;

    uint64_t stagingSize = 2 * halfSize_;
    if ((r = kernel_.boFromUserMem(dev_, staging_.span().data(), stagingSize, &stagingBo_)) < 0)
        return drmError(r, gpuId_, "amdgpu_create_bo_from_user_mem of the staging buffer");
    haveStagingBo_ = true;
    if ((r = kernel_.vaRangeAlloc(dev_, stagingSize, kPage, &stagingVa_, &stagingRange_)) < 0)
        return drmError(r, gpuId_, "amdgpu_va_range_alloc for the staging buffer");
    haveStagingVa_ = true;
    if ((r = kernel_.boVaOp(stagingBo_, stagingSize, stagingVa_, true)) < 0)
        return drmError(r, gpuId_, "amdgpu_bo_va_op (map) of the staging buffer");
    stagingMapped_ = true;

    ibSlotDwords_ = sdmaIbDwordsFor(halfSize_);
    uint64_t ibBytes = pageAlign(2ull * ibSlotDwords_ * sizeof(uint32_t));
    if ((r = kernel_.boAllocGtt(dev_, ibBytes, &ibBo_)) < 0)
        return drmError(r, gpuId_, "amdgpu_bo_alloc of the command buffer");
    haveIbBo_ = true;
    void* cpu = nullptr;
    if ((r = kernel_.boCpuMap(ibBo_, &cpu)) < 0)
        return drmError(r, gpuId_, "amdgpu_bo_cpu_map of the command buffer");
    ibCpu_ = static_cast<uint32_t*>(cpu);
    if ((r = kernel_.vaRangeAlloc(dev_, ibBytes, kPage, &ibVa_, &ibRange_)) < 0)
        return drmError(r, gpuId_, "amdgpu_va_range_alloc for the command buffer");
    haveIbVa_ = true;
    if ((r = kernel_.boVaOp(ibBo_, ibBytes, ibVa_, true)) < 0)
        return drmError(r, gpuId_, "amdgpu_bo_va_op (map) of the command buffer");
    ibMapped_ = true;
    return hal::success();
}

SdmaEngine::~SdmaEngine() {
    uint64_t stagingSize = 2 * halfSize_;
    uint64_t ibBytes = pageAlign(2ull * ibSlotDwords_ * sizeof(uint32_t));
    if (ibMapped_)
        kernel_.boVaOp(ibBo_, ibBytes, ibVa_, false);
    if (haveIbVa_)
        kernel_.vaRangeFree(ibRange_);
    if (ibCpu_)
        kernel_.boCpuUnmap(ibBo_);
    if (haveIbBo_)
        kernel_.boFree(ibBo_);
    if (stagingMapped_)
        kernel_.boVaOp(stagingBo_, stagingSize, stagingVa_, false);
    if (haveStagingVa_)
        kernel_.vaRangeFree(stagingRange_);
    if (haveStagingBo_)
        kernel_.boFree(stagingBo_);
    if (haveCtx_)
        kernel_.ctxFree(ctx_);
    if (haveDevice_)
        kernel_.deviceDeinitialize(dev_);
}

std::span<std::byte> SdmaEngine::half(int index) {
    return staging_.span().subspan(static_cast<size_t>(index) * halfSize_, halfSize_);
}

hal::Result<std::unique_ptr<ImportedBo>> SdmaEngine::importBo(int dmabufFd, uint64_t minSize) {
    auto bo = std::make_unique<ImportedBo>();
    int r = kernel_.boImportDmabuf(dev_, dmabufFd, &bo->bo, &bo->size);
    if (r < 0)
        return drmError(r, gpuId_, "amdgpu_bo_import of a BO's dmabuf");
    if (bo->size < minSize) {
        kernel_.boFree(bo->bo);
        return hal::makeError(hal::ErrorCode::Kernel,
                              "GPU %s: the imported BO has %llu bytes, the checkpoint says %llu",
                              hal::gpuIdHex(gpuId_).c_str(),
                              static_cast<unsigned long long>(bo->size),
                              static_cast<unsigned long long>(minSize));
    }
    if ((r = kernel_.vaRangeAlloc(dev_, pageAlign(bo->size), kPage, &bo->va, &bo->range)) < 0) {
        kernel_.boFree(bo->bo);
        return drmError(r, gpuId_, "amdgpu_va_range_alloc for a BO");
    }
    if ((r = kernel_.boVaOp(bo->bo, pageAlign(bo->size), bo->va, true)) < 0) {
        kernel_.vaRangeFree(bo->range);
        kernel_.boFree(bo->bo);
        return drmError(r, gpuId_, "amdgpu_bo_va_op (map) of a BO");
    }
    if ((r = kernel_.boListCreate(dev_, {bo->bo, stagingBo_, ibBo_}, &bo->list)) < 0) {
        kernel_.boVaOp(bo->bo, pageAlign(bo->size), bo->va, false);
        kernel_.vaRangeFree(bo->range);
        kernel_.boFree(bo->bo);
        return drmError(r, gpuId_, "amdgpu_bo_list_create");
    }
    return bo;
}

void SdmaEngine::release(std::unique_ptr<ImportedBo> bo) {
    if (!bo)
        return;
    int r1 = kernel_.boListDestroy(bo->list);
    int r2 = kernel_.boVaOp(bo->bo, pageAlign(bo->size), bo->va, false);
    int r3 = kernel_.vaRangeFree(bo->range);
    int r4 = kernel_.boFree(bo->bo);
    if (r1 < 0 || r2 < 0 || r3 < 0 || r4 < 0)
        HAL_LOG_WARN("GPU %s: releasing an imported BO failed (%d %d %d %d)",
                     hal::gpuIdHex(gpuId_).c_str(), r1, r2, r3, r4);
}

hal::Result<uint64_t> SdmaEngine::submitCopy(CopyDirection dir, const ImportedBo& bo,
                                             uint64_t boOffset, int halfIndex, uint64_t bytes) {
    if (bytes == 0 || bytes > halfSize_ || boOffset + bytes > bo.size)
        return hal::makeError(hal::ErrorCode::Internal,
                              "GPU %s: bad SDMA copy of %llu bytes at BO offset %llu",
                              hal::gpuIdHex(gpuId_).c_str(), static_cast<unsigned long long>(bytes),
                              static_cast<unsigned long long>(boOffset));
    uint64_t host = stagingVa_ + static_cast<uint64_t>(halfIndex) * halfSize_;
    uint64_t dev = bo.va + boOffset;
    std::vector<uint32_t> ib;
    if (dir == CopyDirection::BoToHost)
        appendSdmaCopy(ib, dev, host, bytes);
    else
        appendSdmaCopy(ib, host, dev, bytes);
    padSdmaIb(ib);
    uint32_t* slot = ibCpu_ + static_cast<size_t>(halfIndex) * ibSlotDwords_;
    memcpy(slot, ib.data(), ib.size() * sizeof(uint32_t));
    uint64_t slotVa = ibVa_ + static_cast<uint64_t>(halfIndex) * ibSlotDwords_ * sizeof(uint32_t);
    uint64_t seq = 0;
    int r = kernel_.submitSdma(ctx_, bo.list, slotVa, static_cast<uint32_t>(ib.size()), &seq);
    if (r < 0)
        return drmError(r, gpuId_, "amdgpu_cs_submit of an SDMA copy");
    return seq;
}

hal::Result<void> SdmaEngine::wait(uint64_t seq) {
    bool signaled = false;
    int r = kernel_.waitFence(ctx_, seq, kFenceTimeoutNs, &signaled);
    if (r < 0)
        return drmError(r, gpuId_, "waiting for an SDMA copy (amdgpu_cs_query_fence_status)");
    if (!signaled)
        return hal::makeError(hal::ErrorCode::Kernel,
                              "GPU %s: an SDMA copy did not complete within %llu s",
                              hal::gpuIdHex(gpuId_).c_str(),
                              static_cast<unsigned long long>(kFenceTimeoutNs / 1000000000ull));
    return hal::success();
}

} // namespace kfd
