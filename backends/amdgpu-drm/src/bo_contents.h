#pragma once
/// \file
/// How a BO's contents are read and written: through a CPU mapping of the render fd at the BO's
/// GEM_MMAP offset when the CPU can reach it, else by SDMA into the bounded staging buffer: in a
/// GPU VM of our own through a dma-buf of the BO, or, for a VM_ALWAYS_VALID BO (which the kernel
/// neither exports nor opens in another VM), on the process's own file (file_sdma.h).

#include "amdgpu-drm/kernel_interface.h"

#include "base/result.h"
#include "content/stream.h"
#include "sdma/engine.h"

#include <cstdint>
#include <memory>

namespace drm {

/// Which way a BO's contents travel.
enum class ContentPath {
    None, ///< no memory to save (GDS, GWS, OA, doorbells, empty)
    Cpu,  ///< CPU mmap of the render fd
    Sdma, ///< SDMA through libdrm_amdgpu, on a dma-buf of the BO in a VM of our own
    /// SDMA on the process's own DRM file, in its VM (file_sdma.h): a VM_ALWAYS_VALID BO the CPU
    /// cannot map, as Mesa makes its VRAM BOs
    FileSdma,
};

/// The path for a BO of these preferred domains and creation flags. The SDMA copies of a VM of our
/// own cannot reach a VM_ALWAYS_VALID BO: the kernel exports none as a dma-buf
/// (amdgpu_gem_prime_export: EPERM) and opens none in another VM (amdgpu_gem_object_open: EPERM);
/// such a BO the CPU cannot map is copied on its own file.
ContentPath contentPathFor(uint64_t preferredDomains, uint64_t allocFlags);

/// Name of a content path, for messages.
const char* contentPathName(ContentPath path);

/// Whether the CPU may map a BO of these creation flags through GEM_MMAP: the kernel refuses a
/// NO_CPU_ACCESS BO (amdgpu_mode_dumb_mmap: EPERM), so such a BO has no CPU mmap offset.
bool cpuMappable(uint64_t allocFlags);

/// A BO mapped for the CPU: source at dump, sink at restore.
class CpuMappedBo final : public content::ContentSource, public content::ContentSink {
public:
    /// Maps `size` bytes of `fd` at `mmapOffset` (read-write when `writable`).
    static base::Result<std::unique_ptr<CpuMappedBo>>
    map(KernelInterface& kernel, int fd, uint64_t mmapOffset, uint64_t size, bool writable);
    ~CpuMappedBo() override;
    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override;
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override;

private:
    CpuMappedBo(KernelInterface& kernel, std::byte* base, uint64_t size)
        : kernel_(kernel), base_(base), size_(size) {}
    KernelInterface& kernel_;
    std::byte* base_;
    uint64_t size_;
};

/// A BO imported into a GPU's SDMA engine, whose staging buffer is the device's one staging
/// buffer, split into the slots of a content lane: each chunk moves between the BO and the slot
/// it is in.
class SdmaBo final : public content::ContentSource, public content::ContentSink {
public:
    /// Imports the BO behind `dmabufFd` (the caller keeps the fd) of `size` bytes.
    static base::Result<std::unique_ptr<SdmaBo>> bind(sdma::Engine& engine, int dmabufFd,
                                                      uint64_t size);
    ~SdmaBo() override;
    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override;
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override;

private:
    SdmaBo(sdma::Engine& engine, std::unique_ptr<sdma::ImportedBo> bo)
        : engine_(engine), bo_(std::move(bo)) {}
    base::Result<uint32_t> slotOf(const std::byte* data);
    sdma::Engine& engine_;
    std::unique_ptr<sdma::ImportedBo> bo_;
};

} // namespace drm
