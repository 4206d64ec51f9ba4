#include "bo_contents.h"

#include <libdrm/amdgpu_drm.h>

#include <sys/mman.h>

#include <cstring>

namespace drm {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;

ContentPath contentPathFor(uint64_t preferredDomains, uint64_t allocFlags) {
    const uint64_t memory = AMDGPU_GEM_DOMAIN_CPU | AMDGPU_GEM_DOMAIN_GTT | AMDGPU_GEM_DOMAIN_VRAM;
    if (!(preferredDomains & memory))
        return ContentPath::None;
    if (preferredDomains & AMDGPU_GEM_DOMAIN_VRAM) {
        bool visible = (allocFlags & AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED) &&
                       !(allocFlags & AMDGPU_GEM_CREATE_NO_CPU_ACCESS);
        if (visible)
            return ContentPath::Cpu;
        return (allocFlags & AMDGPU_GEM_CREATE_VM_ALWAYS_VALID) ? ContentPath::FileSdma
                                                                : ContentPath::Sdma;
    }
    return ContentPath::Cpu;
}

const char* contentPathName(ContentPath path) {
    switch (path) {
    case ContentPath::None:
        return "none";
    case ContentPath::Cpu:
        return "CPU mmap";
    case ContentPath::Sdma:
        return "SDMA";
    case ContentPath::FileSdma:
        return "SDMA on its own file";
    }
    return "?";
}

bool cpuMappable(uint64_t allocFlags) {
    return !(allocFlags & AMDGPU_GEM_CREATE_NO_CPU_ACCESS);
}

base::Result<std::unique_ptr<CpuMappedBo>> CpuMappedBo::map(KernelInterface& kernel, int fd,
                                                            uint64_t mmapOffset, uint64_t size,
                                                            bool writable) {
    int err = 0;
    void* p = kernel.mmap(fd, mmapOffset, size, PROT_READ | (writable ? PROT_WRITE : 0), &err);
    if (!p)
        return makeErrnoError(ErrorCode::Kernel, err, "mmap of %llu bytes at offset 0x%llx failed",
                              static_cast<unsigned long long>(size),
                              static_cast<unsigned long long>(mmapOffset));
    return std::unique_ptr<CpuMappedBo>(new CpuMappedBo(kernel, static_cast<std::byte*>(p), size));
}

CpuMappedBo::~CpuMappedBo() {
    kernel_.munmap(base_, size_);
}

base::Result<void> CpuMappedBo::read(uint64_t offset, std::span<std::byte> out) {
    if (offset + out.size() > size_)
        return makeError(ErrorCode::Internal, "read beyond the BO's end");
    memcpy(out.data(), base_ + offset, out.size());
    return base::success();
}

base::Result<void> CpuMappedBo::write(uint64_t offset, std::span<const std::byte> in) {
    if (offset + in.size() > size_)
        return makeError(ErrorCode::Internal, "write beyond the BO's end");
    memcpy(base_ + offset, in.data(), in.size());
    return base::success();
}

base::Result<std::unique_ptr<SdmaBo>> SdmaBo::bind(sdma::Engine& engine, int dmabufFd,
                                                   uint64_t size) {
    HAL_TRY_ASSIGN(auto bo, engine.importBo(dmabufFd, size));
    return std::unique_ptr<SdmaBo>(new SdmaBo(engine, std::move(bo)));
}

SdmaBo::~SdmaBo() {
    engine_.release(std::move(bo_));
}

base::Result<uint32_t> SdmaBo::slotOf(const std::byte* data) {
    auto slot = engine_.slotAt(data);
    if (!slot)
        return makeError(ErrorCode::Internal, "SDMA chunks must start at a staging slot");
    return *slot;
}

base::Result<void> SdmaBo::read(uint64_t offset, std::span<std::byte> out) {
    HAL_TRY_ASSIGN(uint32_t slot, slotOf(out.data()));
    return engine_.copy(sdma::Direction::BoToHost, *bo_, offset, slot, out.size());
}

base::Result<void> SdmaBo::write(uint64_t offset, std::span<const std::byte> in) {
    HAL_TRY_ASSIGN(uint32_t slot, slotOf(in.data()));
    return engine_.copy(sdma::Direction::HostToBo, *bo_, offset, slot, in.size());
}

} // namespace drm
