#pragma once
/// \file
/// Copies of a BO's contents by SDMA on the process's own DRM file: for the BOs the other paths
/// cannot reach, Mesa's VRAM BOs made VM_ALWAYS_VALID | NO_CPU_ACCESS. The kernel maps no such
/// BO for the CPU (amdgpu_mode_dumb_mmap: EPERM for NO_CPU_ACCESS), exports none as a dma-buf
/// (amdgpu_gem_prime_export: EPERM for VM_ALWAYS_VALID) and opens none in another GPU VM
/// (amdgpu_gem_object_open: EPERM), so it is copied where it lives: in the VM of the file that
/// holds it. Our fd of that file (pidfd_getfd at dump, the restored file at restore) is the same
/// struct drm_file, so the BO's GEM handle and its VM are ours to use.
///
/// A session, for one BO, makes on that file: a context (AMDGPU_CTX ALLOC_CTX), a GTT staging BO
/// holding the IB in its first page and the data after it (GEM_CREATE; CPU-mapped through
/// GEM_MMAP), a GPU VA window no mapping of the file overlaps with the staging BO and the BO
/// mapped in it (GEM_VA MAP; amdgpu_vm_bo_map refuses an overlapping range with EINVAL, and the
/// window is then moved below, ever farther), then one AMDGPU_CS per chunk on SDMA ring 0, the
/// staging BO in its BO list (the VM_ALWAYS_VALID BO is resident with the VM itself:
/// amdgpu_vm_validate), and AMDGPU_WAIT_CS. The session undoes all of it when it ends: both
/// mappings (GEM_VA UNMAP), the staging BO (GEM_CLOSE) and the context (FREE_CTX). The kernel hands
/// out GEM handles and context ids lowest free from 1 (idr_alloc in drm_gem_handle_create_tail,
/// idr_alloc_u32 in amdgpu_ctx_alloc), so with them freed the file's numbers are what they were:
/// the dump runs a session after it has listed the file's BOs, contexts and syncobjs, the restore
/// before it imports into placeholders' numbers.

#include "amdgpu-drm/kernel_interface.h"
#include "drm_calls.h"

#include "base/result.h"
#include "content/stream.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace drm {

/// A GPU VA range in use: (address, bytes).
using VaSpan = std::pair<uint64_t, uint64_t>;

/// The highest address in [lo, hi) at which `bytes` (aligned to `align`) overlap none of
/// `taken`; nothing when no such room is left.
std::optional<uint64_t> freeVaWindow(uint64_t lo, uint64_t hi, uint64_t bytes, uint64_t align,
                                     std::vector<VaSpan> taken);

/// The BO a session copies.
struct FileSdmaTarget {
    int fd = -1;         ///< our fd of the DRM file that holds the BO
    uint32_t handle = 0; ///< its GEM handle there
    uint64_t size = 0;   ///< its size (a page multiple, as amdgpu allocates)
    /// GPU VA ranges the file's VM is known to use (the dump's GET_MAPPING_INFO answers); the
    /// window avoids them, and any other mapping the kernel finds in its way.
    std::vector<VaSpan> taken;
};

/// One BO copied by SDMA on its own file: a source at dump, a sink at restore.
class FileSdmaBo final : public content::ContentSource, public content::ContentSink {
public:
    /// Largest copy one submission makes (the data part of the staging BO).
    static constexpr uint64_t kChunkBytes = 4ull << 20;
    /// How long one copy may take before the engine is called hung.
    static constexpr uint64_t kCopyTimeoutNs = 30ull * 1000 * 1000 * 1000;
    /// How many windows are tried when the kernel finds each in use: each skips twice as far
    /// below the last (2 MiB, 4 MiB, ...: 64 GiB below the first at the last).
    static constexpr int kWindowTries = 16;

    /// Sets up the session (undone if any step fails).
    static base::Result<std::unique_ptr<FileSdmaBo>> open(KernelInterface& kernel,
                                                          const FileSdmaTarget& target);
    /// Undoes the session (failures are logged: nothing is left to do about them).
    ~FileSdmaBo() override;
    FileSdmaBo(const FileSdmaBo&) = delete;
    FileSdmaBo& operator=(const FileSdmaBo&) = delete;

    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override;
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override;

private:
    FileSdmaBo(KernelInterface& kernel, const FileSdmaTarget& target);
    base::Result<void> setUp(std::vector<VaSpan> taken);
    base::Result<void> mapWindow(std::vector<VaSpan> taken);
    /// One submission copying `bytes` between the BO at `boOffset` and the staging data.
    base::Result<void> copy(bool toBo, uint64_t boOffset, uint64_t bytes);

    KernelInterface& kernel_;
    DrmCalls calls_;
    int fd_;
    uint32_t handle_;
    uint64_t size_;
    uint64_t dataBytes_ = 0;
    std::optional<uint32_t> ctx_;
    std::optional<uint32_t> staging_;
    std::byte* stagingCpu_ = nullptr;
    uint64_t stagingBytes_ = 0;
    std::optional<uint64_t> stagingVa_;
    std::optional<uint64_t> boVa_;
};

} // namespace drm
