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

namespace kfd {

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
    return (allocFlags & (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP)) !=
           0;
}

/// "VRAM", "GTT", "USERPTR", "DOORBELL", "MMIO_REMAP" or "?" for messages.
const char* boKindName(uint32_t allocFlags);

} // namespace kfd
