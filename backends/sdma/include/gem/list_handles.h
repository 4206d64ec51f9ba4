#pragma once
/// \file
/// GEM_LIST_HANDLES (Linux 6.18), which both hardware backends ask of a render-node file: its
/// structs and ioctl number, which bookworm's libdrm headers lack, and the grow-and-retry
/// protocol of asking it (the kernel answers with the count it needs when the array is small).

#include "base/result.h"

#include <libdrm/drm.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace gem {

/// `struct drm_amdgpu_gem_list_handles` (Linux 6.18).
struct GemListHandles {
    uint64_t entries = 0;    ///< user pointer to GemListHandlesEntry[num_entries]
    uint32_t numEntries = 0; ///< in: capacity; out: number of BOs (retry when larger)
    uint32_t padding = 0;
};

/// `struct drm_amdgpu_gem_list_handles_entry` (Linux 6.18).
struct GemListHandlesEntry {
    uint32_t gemHandle = 0;
    uint32_t flags = 0; ///< kListHandlesIsImport
    uint64_t size = 0;
    uint64_t preferredDomains = 0;
    uint64_t allocFlags = 0;
    uint64_t alignment = 0;
};

/// GemListHandlesEntry::flags bit: the BO was imported from a dma-buf.
inline constexpr uint32_t kListHandlesIsImport = 1u << 0;

/// `DRM_IOWR(DRM_COMMAND_BASE + 0x19, struct drm_amdgpu_gem_list_handles)`.
inline constexpr unsigned long kIoctlGemListHandles =
    DRM_IOWR(DRM_COMMAND_BASE + 0x19, GemListHandles);

static_assert(sizeof(GemListHandles) == 16);
static_assert(sizeof(GemListHandlesEntry) == 40);
static_assert(kIoctlGemListHandles == 0xc0106459ul);

/// Upper bound on grow-and-retry rounds (the process is frozen; more means a broken kernel).
inline constexpr int kMaxListRetries = 8;

/// ioctl(fd, request, arg) of one render-node file: 0 or -errno.
using FileIoctl = std::function<int(unsigned long request, void* arg)>;

/// GEM_LIST_HANDLES of one file, growing the array until every BO fits. EINVAL or ENOTTY from
/// the kernel becomes a NotSupported error (the kernel predates Linux 6.18).
base::Result<std::vector<GemListHandlesEntry>> listHandles(const FileIoctl& ioctl);

} // namespace gem
