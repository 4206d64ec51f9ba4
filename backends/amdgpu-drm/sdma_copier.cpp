#include "sdma_copier.h"

#include <algorithm>
#include <cstring>

namespace drm {

using hal::ErrorCode;
using hal::makeErrnoError;
using hal::makeError;

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kFenceTimeoutNs = 10ull * 1000 * 1000 * 1000;

uint32_t sdmaHeader(uint32_t op, uint32_t subOp) { return (op & 0xff) | ((subOp & 0xff) << 8); }

uint64_t roundUp(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

} // namespace

std::vector<uint32_t> buildSdmaLinearCopy(uint64_t src, uint64_t dst, uint64_t bytes) {
    std::vector<uint32_t> ib;
    for (uint64_t done = 0; done < bytes;) {
        uint64_t n = std::min(kSdmaMaxCopyBytes, bytes - done);
        ib.push_back(sdmaHeader(kSdmaOpCopy, kSdmaSubOpCopyLinear));
        ib.push_back(static_cast<uint32_t>(n - 1));
        ib.push_back(0);
        ib.push_back(static_cast<uint32_t>(src + done));
        ib.push_back(static_cast<uint32_t>((src + done) >> 32));
        ib.push_back(static_cast<uint32_t>(dst + done));
        ib.push_back(static_cast<uint32_t>((dst + done) >> 32));
        done += n;
    }
    while (ib.size() % 8)
        ib.push_back(sdmaHeader(kSdmaOpNop, 0));
    return ib;
}

hal::Result<std::unique_ptr<SdmaCopier>> SdmaCopier::open(KernelInterface& kernel,
                                                          const std::string& renderNodePath,
                                                          uint32_t family,
                                                          hal::StagingBuffer& staging) {
    if (family < AMDGPU_FAMILY_AI)
        return makeError(ErrorCode::NotSupported,
                         "SDMA copies need a gfx9 or newer GPU (family %u); BOs the CPU cannot "
                         "map cannot be saved on this GPU",
                         family);
    std::unique_ptr<SdmaCopier> c(new SdmaCopier(kernel, staging));
    c->fd_ = kernel.open(renderNodePath);
    if (c->fd_ < 0)
        return makeErrnoError(ErrorCode::Kernel, -c->fd_, "cannot open %s for SDMA copies",
                              renderNodePath.c_str());
    int r = kernel.deviceInitialize(c->fd_, &c->dev_);
    if (r < 0) {
        c->dev_ = nullptr;
        return makeErrnoError(ErrorCode::Kernel, -r, "amdgpu_device_initialize on %s failed",
                              renderNodePath.c_str());
    }
    r = kernel.ctxCreate(c->dev_, &c->ctx_);
    if (r < 0) {
        c->ctx_ = nullptr;
        return makeErrnoError(ErrorCode::Kernel, -r, "amdgpu_cs_ctx_create failed");
    }
    // The IB holds the packets of one staging-buffer-sized copy.
    uint64_t packets = (staging.capacity() + kSdmaMaxCopyBytes - 1) / kSdmaMaxCopyBytes;
    amdgpu_bo_alloc_request req{};
    req.alloc_size = roundUp((packets * 7 + 8) * sizeof(uint32_t), kPage);
    req.phys_alignment = kPage;
    req.preferred_heap = AMDGPU_GEM_DOMAIN_GTT;
    r = kernel.boAlloc(c->dev_, &req, &c->ib_.bo);
    if (r < 0) {
        c->ib_.bo = nullptr;
        return makeErrnoError(ErrorCode::Kernel, -r, "allocating the SDMA IB failed");
    }
    c->ib_.size = req.alloc_size;
    r = kernel.boCpuMap(c->ib_.bo, &c->ibCpu_);
    if (r < 0) {
        c->ibCpu_ = nullptr;
        return makeErrnoError(ErrorCode::Kernel, -r, "mapping the SDMA IB failed");
    }
    HAL_TRY_CONTEXT(c->mapBo(c->ib_), "while mapping the SDMA IB");
    auto span = staging.span();
    r = kernel.boFromUserMem(c->dev_, span.data(), span.size(), &c->stagingBo_.bo);
    if (r < 0) {
        c->stagingBo_.bo = nullptr;
        return makeErrnoError(ErrorCode::Kernel, -r,
                              "registering the %zu-byte staging buffer as a userptr BO failed",
                              span.size());
    }
    c->stagingBo_.size = span.size();
    HAL_TRY_CONTEXT(c->mapBo(c->stagingBo_), "while mapping the staging buffer");
    return c;
}

hal::Result<void> SdmaCopier::mapBo(Mapped& m) {
    int r = kernel_.vaRangeAlloc(dev_, m.size, kPage, &m.addr, &m.va);
    if (r < 0) {
        m.va = nullptr;
        return makeErrnoError(ErrorCode::Kernel, -r, "amdgpu_va_range_alloc of %llu bytes failed",
                              static_cast<unsigned long long>(m.size));
    }
    r = kernel_.boVaOp(m.bo, 0, m.size, m.addr, 0, AMDGPU_VA_OP_MAP);
    if (r < 0) {
        kernel_.vaRangeFree(m.va);
        m.va = nullptr;
        return makeErrnoError(ErrorCode::Kernel, -r, "amdgpu_bo_va_op MAP at 0x%llx failed",
                              static_cast<unsigned long long>(m.addr));
    }
    return hal::success();
}

void SdmaCopier::release(Mapped& m) {
    if (m.va) {
        kernel_.boVaOp(m.bo, 0, m.size, m.addr, 0, AMDGPU_VA_OP_UNMAP);
        kernel_.vaRangeFree(m.va);
    }
    if (m.bo)
        kernel_.boFree(m.bo);
    m = Mapped{};
}

SdmaCopier::~SdmaCopier() {
    unbind();
    release(stagingBo_);
    if (ibCpu_)
        kernel_.boCpuUnmap(ib_.bo);
    release(ib_);
    if (ctx_)
        kernel_.ctxFree(ctx_);
    if (dev_)
        kernel_.deviceDeinitialize(dev_);
    if (fd_ >= 0)
        kernel_.close(fd_);
}

hal::Result<void> SdmaCopier::bind(int dmabufFd, uint64_t size) {
    unbind();
    int r = kernel_.boImportDmabuf(dev_, dmabufFd, &target_.bo);
    if (r < 0) {
        target_.bo = nullptr;
        return makeErrnoError(ErrorCode::Kernel, -r, "amdgpu_bo_import of the BO's dma-buf failed");
    }
    target_.size = roundUp(size, kPage);
    auto mapped = mapBo(target_);
    if (!mapped.ok()) {
        release(target_);
        return mapped;
    }
    amdgpu_bo_handle bos[] = {ib_.bo, stagingBo_.bo, target_.bo};
    r = kernel_.boListCreate(dev_, 3, bos, &list_);
    if (r < 0) {
        list_ = nullptr;
        release(target_);
        return makeErrnoError(ErrorCode::Kernel, -r, "amdgpu_bo_list_create failed");
    }
    return hal::success();
}

void SdmaCopier::unbind() {
    if (list_)
        kernel_.boListDestroy(list_);
    list_ = nullptr;
    release(target_);
}

hal::Result<void> SdmaCopier::copy(CopyDirection direction, uint64_t boOffset, uint64_t bytes) {
    if (!target_.bo)
        return makeError(ErrorCode::Internal, "SDMA copy without a bound BO");
    if (bytes > stagingBo_.size || boOffset + bytes > target_.size)
        return makeError(ErrorCode::Internal, "SDMA copy of %llu bytes at %llu out of range",
                         static_cast<unsigned long long>(bytes),
                         static_cast<unsigned long long>(boOffset));
    uint64_t boAddr = target_.addr + boOffset;
    std::vector<uint32_t> packets =
        direction == CopyDirection::BoToStaging
            ? buildSdmaLinearCopy(boAddr, stagingBo_.addr, bytes)
            : buildSdmaLinearCopy(stagingBo_.addr, boAddr, bytes);
    memcpy(ibCpu_, packets.data(), packets.size() * sizeof(uint32_t));
    amdgpu_cs_ib_info ib{};
    ib.ib_mc_address = ib_.addr;
    ib.size = static_cast<uint32_t>(packets.size());
    amdgpu_cs_request req{};
    req.ip_type = AMDGPU_HW_IP_DMA;
    req.ring = 0;
    req.resources = list_;
    req.number_of_ibs = 1;
    req.ibs = &ib;
    int r = kernel_.csSubmit(ctx_, &req);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "submitting the SDMA copy failed");
    amdgpu_cs_fence fence{};
    fence.context = ctx_;
    fence.ip_type = AMDGPU_HW_IP_DMA;
    fence.ring = 0;
    fence.fence = req.seq_no;
    uint32_t expired = 0;
    r = kernel_.fenceStatus(&fence, kFenceTimeoutNs, &expired);
    if (r < 0)
        return makeErrnoError(ErrorCode::Kernel, -r, "waiting for the SDMA copy failed");
    if (!expired)
        return makeError(ErrorCode::Kernel, "the SDMA copy did not finish within 10 s");
    return hal::success();
}

} // namespace drm
