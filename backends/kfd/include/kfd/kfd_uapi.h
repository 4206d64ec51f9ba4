#pragma once
/// \file
/// The kernel's KFD UAPI (<linux/kfd_ioctl.h> of the build machine), with the layout facts this
/// backend relies on checked at compile time.

#include <linux/kfd_ioctl.h>

#include <cstdint>

static_assert(sizeof(struct kfd_ioctl_criu_args) == 56, "kfd_ioctl_criu_args is 56 bytes");
static_assert(sizeof(struct kfd_criu_device_bucket) == 16, "kfd_criu_device_bucket is 16 bytes");
static_assert(sizeof(struct kfd_criu_bo_bucket) == 48, "kfd_criu_bo_bucket is 48 bytes");
static_assert(AMDKFD_IOC_CRIU_OP == 0xc0384b22, "AMDKFD_IOC_CRIU_OP number");
static_assert(sizeof(struct kfd_ioctl_import_dmabuf_args) == 24,
              "kfd_ioctl_import_dmabuf_args is 24 bytes");
static_assert(AMDKFD_IOC_IMPORT_DMABUF == 0xc0184b1d, "AMDKFD_IOC_IMPORT_DMABUF number");

namespace kfd {

/// AMDKFD_IOC_EXPORT_DMABUF (KFD ioctl 1.12, Linux 6.4): a dma-buf fd of the BO of a KFD memory
/// handle. Bookworm's header (1.11) lacks it, so it is declared here with the kernel's layout.
struct ExportDmabufArgs {
    uint64_t handle;    ///< to KFD: the handle ALLOC_MEMORY_OF_GPU or IMPORT_DMABUF returned
    uint32_t flags;     ///< to KFD: O_CLOEXEC and/or O_RDWR for the new fd
    uint32_t dmabuf_fd; ///< from KFD
};
static_assert(sizeof(ExportDmabufArgs) == 16, "kfd_ioctl_export_dmabuf_args is 16 bytes");
inline constexpr unsigned long kIocExportDmabuf = AMDKFD_IOWR(0x24, ExportDmabufArgs);
static_assert(kIocExportDmabuf == 0xc0104b24, "AMDKFD_IOC_EXPORT_DMABUF number");

/// A KFD memory handle: the user gpu_id in the high 32 bits, the process's BO id in the low ones.
inline constexpr uint64_t makeMemHandle(uint32_t gpuId, uint32_t id) {
    return (static_cast<uint64_t>(gpuId) << 32) | id;
}

/// The alloc flags the kernel gives a BO imported through IMPORT_DMABUF (and CHECKPOINT then
/// reports): VRAM or GTT after the exporter's placement, writable, executable.
inline constexpr uint32_t importedBoFlags(bool vram) {
    return (vram ? KFD_IOC_ALLOC_MEM_FLAGS_VRAM : KFD_IOC_ALLOC_MEM_FLAGS_GTT) |
           KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
}

/// The kernel's "no fd" value in kfd_criu_bo_bucket::dmabuf_fd (KFD_INVALID_FD).
inline constexpr uint32_t kInvalidFd = 0xffffffffu;
/// KFD ioctl version the CRIU ops need: 1.8 (SDMA transfers of GTT BOs).
inline constexpr uint32_t kMinKfdMajor = 1;
inline constexpr uint32_t kMinKfdMinor = 8;
/// Major number of render nodes (DRM), and the first render minor.
inline constexpr unsigned kDrmMajor = 226;
inline constexpr unsigned kFirstRenderMinor = 128;

/// Whether a BO's contents live on the GPU and travel in pages files (VRAM or GTT).
inline bool boHasContents(uint32_t allocFlags) {
    return (allocFlags & (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT)) != 0;
}

/// Whether a BO is mapped by the application through /dev/kfd (doorbells, MMIO remap) rather
/// than through its GPU's render node.
inline bool boMappedThroughKfd(uint32_t allocFlags) {
    return (allocFlags & (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)) != 0;
}

/// "VRAM", "GTT", "USERPTR", "DOORBELL", "MMIO_REMAP" or "?" for messages.
const char* boKindName(uint32_t allocFlags);

} // namespace kfd
