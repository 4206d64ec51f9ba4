#pragma once
/// \file
/// One GPU's SDMA copy session through libdrm_amdgpu: its own render-node fd (so its GPU VM is
/// separate from the application's and libdrm's VA manager cannot collide with the
/// application's VAs), a context, a host staging buffer of two halves registered once as a
/// userptr BO, and a command-buffer BO with one IB slot per half.

#include "hal/content_stream.h"
#include "hal/result.h"
#include "kfd/kernel_interface.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace kfd {

/// A device BO imported from a dmabuf fd and mapped into the engine's GPU VA space.
struct ImportedBo {
    DrmBo bo{};
    uint64_t size = 0; ///< the mapped size (the BO's allocation size)
    uint64_t va = 0;
    DrmVaRange range{};
    DrmBoList list{};
};

/// Which way a copy goes.
enum class CopyDirection { BoToHost, HostToBo };

/// An SDMA session on one GPU; not thread-safe (one worker thread owns it).
class SdmaEngine {
public:
    /// Opens `renderPath`, initialises libdrm on it and sets up a staging buffer of
    /// `stagingBytes` (split into two page-aligned halves).
    static hal::Result<std::unique_ptr<SdmaEngine>> open(KernelInterface& kernel,
                                                         const std::string& renderPath,
                                                         uint32_t gpuId, uint64_t stagingBytes);
    ~SdmaEngine();
    SdmaEngine(const SdmaEngine&) = delete;
    SdmaEngine& operator=(const SdmaEngine&) = delete;

    /// Bytes of one half of the staging buffer (the largest single copy).
    uint64_t halfSize() const { return halfSize_; }
    /// Host memory of half 0 or 1.
    std::span<std::byte> half(int index);
    /// Imports `dmabufFd` (a BO of at least `minSize` bytes) and maps it.
    hal::Result<std::unique_ptr<ImportedBo>> importBo(int dmabufFd, uint64_t minSize);
    /// Unmaps and frees an imported BO (errors are logged: nothing is left to do about them).
    void release(std::unique_ptr<ImportedBo> bo);
    /// Submits one copy of `bytes` between `bo` at `boOffset` and staging half `halfIndex`;
    /// returns the fence sequence number.
    hal::Result<uint64_t> submitCopy(CopyDirection dir, const ImportedBo& bo, uint64_t boOffset,
                                     int halfIndex, uint64_t bytes);
    /// Waits for a submission to complete.
    hal::Result<void> wait(uint64_t seq);
    /// The GPU, for messages.
    uint32_t gpuId() const { return gpuId_; }

private:
    SdmaEngine(KernelInterface& kernel, uint32_t gpuId, uint64_t stagingBytes);
    hal::Result<void> setUp(const std::string& renderPath);

    KernelInterface& kernel_;
    uint32_t gpuId_;
    hal::StagingBuffer staging_;
    uint64_t halfSize_ = 0;
    KernelFd renderFd_;
    bool haveDevice_ = false;
    DrmDevice dev_{};
    bool haveCtx_ = false;
    DrmContext ctx_{};
    bool haveStagingBo_ = false;
    DrmBo stagingBo_{};
    bool haveStagingVa_ = false;
    DrmVaRange stagingRange_{};
    uint64_t stagingVa_ = 0;
    bool stagingMapped_ = false;
    bool haveIbBo_ = false;
    DrmBo ibBo_{};
    uint32_t* ibCpu_ = nullptr;
    bool haveIbVa_ = false;
    DrmVaRange ibRange_{};
    uint64_t ibVa_ = 0;
    bool ibMapped_ = false;
    uint32_t ibSlotDwords_ = 0;
};

} // namespace kfd
