#pragma once
/// \file
/// One GPU's SDMA copy session through libdrm_amdgpu: its own render-node fd (so its GPU VM is
/// separate from the application's and libdrm's VA manager cannot collide with the
/// application's VAs), a context, a host staging buffer of equal slots registered once as one
/// userptr BO, and a command-buffer BO with one IB slot per staging slot. With two slots a
/// caller overlaps the copy into one slot with file I/O on the other.

#include "base/result.h"
#include "content/stream.h"
#include "sdma/libdrm.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace sdma {

/// A device BO imported from a dmabuf fd and mapped into the engine's GPU VA space.
struct ImportedBo {
    Bo bo{};
    uint64_t size = 0; ///< the mapped size (the BO's allocation size)
    uint64_t va = 0;
    VaRange range{};
    BoList list{};
};

/// Which way a copy goes.
enum class Direction { BoToHost, HostToBo };

/// What an engine runs on.
struct EngineOptions {
    std::string renderPath; ///< the render node of the GPU that holds the BOs
    std::string gpuName;    ///< how messages name the GPU ("0x59ea", "renderD128")
    uint32_t slots = 2;     ///< staging slots (and IB slots) the staging buffer splits into
};

/// An SDMA session on one GPU; not thread-safe (one worker thread owns it).
class Engine {
public:
    /// How long wait() waits for a fence before it calls the engine hung.
    static constexpr uint64_t kFenceTimeoutNs = 30ull * 1000 * 1000 * 1000;

    /// Sets up a session whose staging buffer is `staging` (page aligned, at least one page per
    /// slot; the caller keeps it alive and does not move it while the engine lives).
    static base::Result<std::unique_ptr<Engine>> open(Libdrm& libdrm, const EngineOptions& options,
                                                      std::span<std::byte> staging);
    /// Sets up a session with a staging buffer of its own of `stagingBytes` (at least a page
    /// per slot).
    static base::Result<std::unique_ptr<Engine>> open(Libdrm& libdrm, const EngineOptions& options,
                                                      uint64_t stagingBytes);
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    /// Bytes of one staging slot (the largest single copy).
    uint64_t slotSize() const { return slotSize_; }
    /// Host memory of staging slot `index`.
    std::span<std::byte> slot(uint32_t index);
    /// The slot whose memory starts at `data`; nullopt when no slot does.
    std::optional<uint32_t> slotAt(const std::byte* data) const;
    /// Imports `dmabufFd` (a BO of at least `minSize` bytes; the caller keeps the fd) and maps it.
    base::Result<std::unique_ptr<ImportedBo>> importBo(int dmabufFd, uint64_t minSize);
    /// Unmaps and frees an imported BO (errors are logged: nothing is left to do about them).
    void release(std::unique_ptr<ImportedBo> bo);
    /// Submits one copy of `bytes` between `bo` at `boOffset` and the start of staging slot
    /// `slotIndex`; returns the fence sequence number.
    base::Result<uint64_t> submitCopy(Direction dir, const ImportedBo& bo, uint64_t boOffset,
                                      uint32_t slotIndex, uint64_t bytes);
    /// Waits for a submission to complete; a fence that does not signal is a hung engine.
    base::Result<void> wait(uint64_t seq);
    /// submitCopy and wait.
    base::Result<void> copy(Direction dir, const ImportedBo& bo, uint64_t boOffset,
                            uint32_t slotIndex, uint64_t bytes);
    /// How messages name the GPU.
    const std::string& gpuName() const { return options_.gpuName; }

private:
    /// A BO of the engine's own mapped at a VA of its own.
    struct Mapped {
        std::optional<Bo> bo;
        std::optional<VaRange> range;
        uint64_t va = 0;
        uint64_t size = 0;
        bool mapped = false;
    };

    Engine(Libdrm& libdrm, EngineOptions options, std::span<std::byte> staging);
    base::Result<void> setUp();
    base::Result<void> mapOwn(Mapped& m, const char* what);
    void releaseOwn(Mapped& m);
    base::Error failure(int r, const char* what) const;

    Libdrm& libdrm_;
    EngineOptions options_;
    std::unique_ptr<content::StagingBuffer> ownStaging_;
    std::span<std::byte> staging_;
    uint64_t slotSize_ = 0;
    int fd_ = -1;
    std::optional<Device> dev_;
    std::optional<Context> ctx_;
    Mapped stagingBo_;
    Mapped ib_;
    uint32_t* ibCpu_ = nullptr;
    uint32_t ibSlotDwords_ = 0;
};

} // namespace sdma
