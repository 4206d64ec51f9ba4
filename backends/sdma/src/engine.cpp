#include "sdma/engine.h"

#include "base/log.h"
#include "sdma/packets.h"

#include <cstring>
#include <vector>

namespace sdma {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t pageAlign(uint64_t n) {
    return (n + kPage - 1) / kPage * kPage;
}

} // namespace

Engine::Engine(Libdrm& libdrm, EngineOptions options, std::span<std::byte> staging)
    : libdrm_(libdrm), options_(std::move(options)), staging_(staging) {
    if (options_.slots == 0)
        options_.slots = 1;
    slotSize_ = staging_.size() / options_.slots / kPage * kPage;
}

base::Result<std::unique_ptr<Engine>> Engine::open(Libdrm& libdrm, const EngineOptions& options,
                                                   std::span<std::byte> staging) {
    std::unique_ptr<Engine> engine(new Engine(libdrm, options, staging));
    HAL_TRY(engine->setUp());
    return engine;
}

base::Result<std::unique_ptr<Engine>> Engine::open(Libdrm& libdrm, const EngineOptions& options,
                                                   uint64_t stagingBytes) {
    uint64_t least = static_cast<uint64_t>(std::max<uint32_t>(options.slots, 1)) * kPage;
    auto own = std::make_unique<content::StagingBuffer>(std::max(stagingBytes, least));
    std::unique_ptr<Engine> engine(new Engine(libdrm, options, own->span()));
    engine->ownStaging_ = std::move(own);
    HAL_TRY(engine->setUp());
    return engine;
}

base::Error Engine::failure(int r, const char* what) const {
    return base::makeErrnoError(base::ErrorCode::Kernel, -r, "GPU %s: %s failed",
                                options_.gpuName.c_str(), what);
}

base::Result<void> Engine::setUp() {
    if (slotSize_ == 0 || reinterpret_cast<uintptr_t>(staging_.data()) % kPage)
        return base::makeError(base::ErrorCode::Internal,
                               "GPU %s: a staging buffer of %zu bytes cannot hold %u page-aligned "
                               "SDMA slots",
                               options_.gpuName.c_str(), staging_.size(), options_.slots);
    int fd = libdrm_.openRenderNode(options_.renderPath);
    if (fd < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -fd,
                                    "GPU %s: cannot open render node %s for SDMA copies",
                                    options_.gpuName.c_str(), options_.renderPath.c_str());
    fd_ = fd;
    Device dev{};
    if (int r = libdrm_.deviceInitialize(fd_, &dev); r < 0)
        return failure(r, "amdgpu_device_initialize");
    dev_ = dev;
    Context ctx{};
    if (int r = libdrm_.ctxCreate(*dev_, &ctx); r < 0)
        return failure(r, "amdgpu_cs_ctx_create");
    ctx_ = ctx;

    Bo bo{};
    stagingBo_.size = slotSize_ * options_.slots;
    if (int r = libdrm_.boFromUserMem(*dev_, staging_.data(), stagingBo_.size, &bo); r < 0)
        return failure(r, "amdgpu_create_bo_from_user_mem of the staging buffer");
    stagingBo_.bo = bo;
    HAL_TRY(mapOwn(stagingBo_, "the staging buffer"));

    ibSlotDwords_ = ibDwordsFor(slotSize_);
    ib_.size = pageAlign(uint64_t{options_.slots} * ibSlotDwords_ * sizeof(uint32_t));
    if (int r = libdrm_.boAllocGtt(*dev_, ib_.size, &bo); r < 0)
        return failure(r, "amdgpu_bo_alloc of the command buffer");
    ib_.bo = bo;
    void* cpu = nullptr;
    if (int r = libdrm_.boCpuMap(*ib_.bo, &cpu); r < 0)
        return failure(r, "amdgpu_bo_cpu_map of the command buffer");
    ibCpu_ = static_cast<uint32_t*>(cpu);
    return mapOwn(ib_, "the command buffer");
}

base::Result<void> Engine::mapOwn(Mapped& m, const char* what) {
    VaRange range{};
    if (int r = libdrm_.vaRangeAlloc(*dev_, m.size, kPage, &m.va, &range); r < 0)
        return failure(r, base::strFormat("amdgpu_va_range_alloc for %s", what).c_str());
    m.range = range;
    if (int r = libdrm_.boVaOp(*m.bo, m.size, m.va, true); r < 0)
        return failure(r, base::strFormat("amdgpu_bo_va_op (map) of %s", what).c_str());
    m.mapped = true;
    return base::success();
}

void Engine::releaseOwn(Mapped& m) {
    if (m.mapped)
        libdrm_.boVaOp(*m.bo, m.size, m.va, false);
    if (m.range)
        libdrm_.vaRangeFree(*m.range);
    if (&m == &ib_ && ibCpu_)
        libdrm_.boCpuUnmap(*m.bo);
    if (m.bo)
        libdrm_.boFree(*m.bo);
}

Engine::~Engine() {
    releaseOwn(ib_);
    releaseOwn(stagingBo_);
    if (ctx_)
        libdrm_.ctxFree(*ctx_);
    if (dev_)
        libdrm_.deviceDeinitialize(*dev_);
    if (fd_ >= 0)
        libdrm_.closeRenderNode(fd_);
}

std::span<std::byte> Engine::slot(uint32_t index) {
    return staging_.subspan(static_cast<size_t>(index) * slotSize_, slotSize_);
}

std::optional<uint32_t> Engine::slotAt(const std::byte* data) const {
    for (uint32_t i = 0; i < options_.slots; ++i)
        if (data == staging_.data() + static_cast<size_t>(i) * slotSize_)
            return i;
    return std::nullopt;
}

base::Result<std::unique_ptr<ImportedBo>> Engine::importBo(int dmabufFd, uint64_t minSize) {
    auto bo = std::make_unique<ImportedBo>();
    if (int r = libdrm_.boImportDmabuf(*dev_, dmabufFd, &bo->bo, &bo->size); r < 0)
        return failure(r, "amdgpu_bo_import of a BO's dmabuf");
    if (bo->size < minSize) {
        libdrm_.boFree(bo->bo);
        return base::makeError(base::ErrorCode::Kernel,
                               "GPU %s: the imported BO has %llu bytes, the checkpoint says %llu",
                               options_.gpuName.c_str(), static_cast<unsigned long long>(bo->size),
                               static_cast<unsigned long long>(minSize));
    }
    uint64_t mapped = pageAlign(bo->size);
    if (int r = libdrm_.vaRangeAlloc(*dev_, mapped, kPage, &bo->va, &bo->range); r < 0) {
        libdrm_.boFree(bo->bo);
        return failure(r, "amdgpu_va_range_alloc for a BO");
    }
    if (int r = libdrm_.boVaOp(bo->bo, mapped, bo->va, true); r < 0) {
        libdrm_.vaRangeFree(bo->range);
        libdrm_.boFree(bo->bo);
        return failure(r, "amdgpu_bo_va_op (map) of a BO");
    }
    if (int r = libdrm_.boListCreate(*dev_, {bo->bo, *stagingBo_.bo, *ib_.bo}, &bo->list); r < 0) {
        libdrm_.boVaOp(bo->bo, mapped, bo->va, false);
        libdrm_.vaRangeFree(bo->range);
        libdrm_.boFree(bo->bo);
        return failure(r, "amdgpu_bo_list_create");
    }
    return bo;
}

void Engine::release(std::unique_ptr<ImportedBo> bo) {
    if (!bo)
        return;
    int r1 = libdrm_.boListDestroy(bo->list);
    int r2 = libdrm_.boVaOp(bo->bo, pageAlign(bo->size), bo->va, false);
    int r3 = libdrm_.vaRangeFree(bo->range);
    int r4 = libdrm_.boFree(bo->bo);
    if (r1 < 0 || r2 < 0 || r3 < 0 || r4 < 0)
        HAL_LOG_WARN("GPU %s: releasing an imported BO failed (%d %d %d %d)",
                     options_.gpuName.c_str(), r1, r2, r3, r4);
}

base::Result<uint64_t> Engine::submitCopy(Direction dir, const ImportedBo& bo, uint64_t boOffset,
                                          uint32_t slotIndex, uint64_t bytes) {
    if (bytes == 0 || bytes > slotSize_ || slotIndex >= options_.slots ||
        boOffset + bytes > bo.size)
        return base::makeError(base::ErrorCode::Internal,
                               "GPU %s: bad SDMA copy of %llu bytes at BO offset %llu (slot %u)",
                               options_.gpuName.c_str(), static_cast<unsigned long long>(bytes),
                               static_cast<unsigned long long>(boOffset), slotIndex);
    uint64_t host = stagingBo_.va + uint64_t{slotIndex} * slotSize_;
    uint64_t dev = bo.va + boOffset;
    std::vector<uint32_t> ib = dir == Direction::BoToHost ? buildLinearCopy(dev, host, bytes)
                                                          : buildLinearCopy(host, dev, bytes);
    uint32_t* slotCpu = ibCpu_ + static_cast<size_t>(slotIndex) * ibSlotDwords_;
    memcpy(slotCpu, ib.data(), ib.size() * sizeof(uint32_t));
    uint64_t slotVa = ib_.va + uint64_t{slotIndex} * ibSlotDwords_ * sizeof(uint32_t);
    uint64_t seq = 0;
    int r = libdrm_.submitSdma(*ctx_, bo.list, slotVa, static_cast<uint32_t>(ib.size()), &seq);
    if (r < 0)
        return failure(r, "amdgpu_cs_submit of an SDMA copy");
    return seq;
}

base::Result<void> Engine::wait(uint64_t seq) {
    bool signaled = false;
    int r = libdrm_.waitFence(*ctx_, seq, kFenceTimeoutNs, &signaled);
    if (r < 0)
        return failure(r, "waiting for an SDMA copy (amdgpu_cs_query_fence_status)");
    if (!signaled)
        return base::makeError(base::ErrorCode::Kernel,
                               "GPU %s: an SDMA copy did not complete within %llu s: the GPU's "
                               "SDMA engine is hung (see the kernel log for a GPU reset)",
                               options_.gpuName.c_str(),
                               static_cast<unsigned long long>(kFenceTimeoutNs / 1000000000ull));
    return base::success();
}

base::Result<void> Engine::copy(Direction dir, const ImportedBo& bo, uint64_t boOffset,
                                uint32_t slotIndex, uint64_t bytes) {
    HAL_TRY_ASSIGN(uint64_t seq, submitCopy(dir, bo, boOffset, slotIndex, bytes));
    return wait(seq);
}

} // namespace sdma
