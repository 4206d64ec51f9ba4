#pragma once
/// \file
/// Copying BO contents with the GPU's SDMA engine through libdrm_amdgpu, for BOs the CPU cannot
/// map. The copier owns its own render-node fd and libdrm device, so the GPU addresses libdrm's
/// VA manager hands out live in a VM that holds none of the application's mappings: staging
/// copies cannot collide with the application's GPU addresses at dump or at restore.

#include "kernel_interface.h"

#include "hal/content_stream.h"
#include "hal/result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace drm {

/// Largest byte count of one SDMA linear-copy packet (gfx9 and newer).
inline constexpr uint64_t kSdmaMaxCopyBytes = 1ull << 21;
/// SDMA opcodes used here.
inline constexpr uint32_t kSdmaOpNop = 0;
inline constexpr uint32_t kSdmaOpCopy = 1;
inline constexpr uint32_t kSdmaSubOpCopyLinear = 0;

/// SDMA linear-copy packets (7 dwords each: header, count-1, parameter, src lo/hi, dst lo/hi)
/// moving `bytes` from GPU address `src` to `dst`, padded with NOPs to a multiple of 8 dwords.
std::vector<uint32_t> buildSdmaLinearCopy(uint64_t src, uint64_t dst, uint64_t bytes);

/// Direction of a copy.
enum class CopyDirection { BoToStaging, StagingToBo };

/// One GPU's SDMA copier between a bound BO and the bounded staging buffer.
class SdmaCopier {
public:
    /// Opens `renderNodePath` and sets up libdrm, a context, the IB and the staging buffer as a
    /// userptr BO. `family` is AMDGPU_INFO_DEV_INFO's family (SDMA packets need gfx9+).
    static hal::Result<std::unique_ptr<SdmaCopier>> open(KernelInterface& kernel,
                                                         const std::string& renderNodePath,
                                                         uint32_t family,
                                                         hal::StagingBuffer& staging);
    ~SdmaCopier();
    SdmaCopier(const SdmaCopier&) = delete;
    SdmaCopier& operator=(const SdmaCopier&) = delete;

    /// Imports the BO behind `dmabufFd` (the caller keeps the fd) and maps it for copies.
    hal::Result<void> bind(int dmabufFd, uint64_t size);
    /// Releases the bound BO (no-op when none).
    void unbind();
    /// Copies `bytes` between the bound BO at `boOffset` and the start of the staging buffer.
    hal::Result<void> copy(CopyDirection direction, uint64_t boOffset, uint64_t bytes);

private:
    SdmaCopier(KernelInterface& kernel, hal::StagingBuffer& staging)
        : kernel_(kernel), staging_(staging) {}

    /// A BO with its VA range.
    struct Mapped {
        amdgpu_bo_handle bo = nullptr;
        amdgpu_va_handle va = nullptr;
        uint64_t addr = 0;
        uint64_t size = 0;
    };
    hal::Result<void> mapBo(Mapped& m);
    void release(Mapped& m);

    KernelInterface& kernel_;
    hal::StagingBuffer& staging_;
    int fd_ = -1;
    amdgpu_device_handle dev_ = nullptr;
    amdgpu_context_handle ctx_ = nullptr;
    Mapped ib_;
    void* ibCpu_ = nullptr;
    Mapped stagingBo_;
    Mapped target_;
    amdgpu_bo_list_handle list_ = nullptr;
};

} // namespace drm
