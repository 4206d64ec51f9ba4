#pragma once
/// \file
/// The kernel interface of render-node checkpoint/restore: what Debian bookworm's libdrm headers
/// declare (GEM create/mmap/VA, INFO, PRIME), plus the Linux 6.18 additions its headers lack
/// (GEM_OP GET_MAPPING_INFO with the 24-byte gem_op, GEM_CHANGE_HANDLE; GEM_LIST_HANDLES, which
/// the kfd backend asks too, from backends/sdma's gem/list_handles.h), declared with their
/// sizes and ioctl numbers checked at compile time (kernel-uapi.md).

#include "gem/list_handles.h"

#include <libdrm/amdgpu_drm.h>
#include <libdrm/drm.h>

#include <cstdint>

namespace drm {

// GEM_LIST_HANDLES (Linux 6.18), which the kfd backend asks as well.
using gem::GemListHandles;
using gem::GemListHandlesEntry;
using gem::kIoctlGemListHandles;
using gem::kListHandlesIsImport;

/// `struct drm_amdgpu_gem_op` as grown in Linux 6.18 (16 -> 24 bytes).
struct GemOp {
    uint32_t handle = 0;
    uint32_t op = 0;
    uint64_t value = 0;      ///< GET_MAPPING_INFO: user pointer to GemVmEntry[num_entries]
    uint32_t numEntries = 0; ///< in: capacity; out: number of mappings (retry when larger)
    uint32_t padding = 0;
};

/// `struct drm_amdgpu_gem_vm_entry` (Linux 6.18).
struct GemVmEntry {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint64_t offset = 0;
    uint64_t flags = 0;
};

/// `AMDGPU_GEM_OP_GET_MAPPING_INFO` (Linux 6.18).
inline constexpr uint32_t kGemOpGetMappingInfo = 2;

/// `struct drm_gem_change_handle` (Linux 6.18).
struct GemChangeHandle {
    uint32_t handle = 0;
    uint32_t newHandle = 0;
};

/// `DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP, struct drm_amdgpu_gem_op)` (24-byte form).
inline constexpr unsigned long kIoctlGemOp = DRM_IOWR(DRM_COMMAND_BASE + DRM_AMDGPU_GEM_OP, GemOp);
/// `DRM_IOWR(0xD2, struct drm_gem_change_handle)`.
inline constexpr unsigned long kIoctlGemChangeHandle = DRM_IOWR(0xD2, GemChangeHandle);

static_assert(sizeof(GemOp) == 24);
static_assert(sizeof(GemVmEntry) == 32);
static_assert(sizeof(GemChangeHandle) == 8);
static_assert(kIoctlGemOp == 0xc0186450ul);
static_assert(DRM_IOCTL_AMDGPU_GEM_OP == 0xc0106450ul, "the 16-byte form bookworm declares");
static_assert(kIoctlGemChangeHandle == 0xc00864d2ul);

// The ioctls every amdgpu kernel has, from libdrm's headers; their sizes checked as well so a
// header change cannot silently change the ABI this backend speaks.
static_assert(sizeof(union drm_amdgpu_gem_create) == 32);
static_assert(sizeof(union drm_amdgpu_gem_mmap) == 8);
static_assert(sizeof(struct drm_amdgpu_gem_va) == 40);
static_assert(sizeof(struct drm_amdgpu_info) == 32);
static_assert(sizeof(struct drm_prime_handle) == 12);
static_assert(DRM_IOCTL_AMDGPU_GEM_CREATE == 0xc0206440ul);
static_assert(DRM_IOCTL_AMDGPU_GEM_MMAP == 0xc0086441ul);
static_assert(DRM_IOCTL_AMDGPU_GEM_VA == 0x40286448ul);
static_assert(DRM_IOCTL_AMDGPU_INFO == 0x40206445ul);

// GPU contexts and syncobjs, from libdrm's headers (bookworm's drm_syncobj_wait is the 32-byte
// form before deadline_nsec, which drm_ioctl takes, zero-filling the rest).
static_assert(sizeof(union drm_amdgpu_ctx) == 16);
static_assert(sizeof(struct drm_syncobj_create) == 8);
static_assert(sizeof(struct drm_syncobj_destroy) == 8);
static_assert(sizeof(struct drm_syncobj_handle) == 16);
static_assert(sizeof(struct drm_syncobj_wait) == 32);
static_assert(sizeof(struct drm_syncobj_timeline_wait) == 40);
static_assert(sizeof(struct drm_syncobj_array) == 16);
static_assert(sizeof(struct drm_syncobj_timeline_array) == 24);
static_assert(sizeof(struct drm_syncobj_transfer) == 32);
static_assert(DRM_IOCTL_AMDGPU_CTX == 0xc0106442ul);
static_assert(DRM_IOCTL_SYNCOBJ_CREATE == 0xc00864bful);
static_assert(DRM_IOCTL_SYNCOBJ_WAIT == 0xc02064c3ul);
static_assert(DRM_IOCTL_SYNCOBJ_QUERY == 0xc01864cbul);
static_assert(DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL == 0xc01864cdul);

// SDMA copies on the process's own file (file_sdma.h): command submission and its wait.
static_assert(sizeof(union drm_amdgpu_cs) == 24);
static_assert(sizeof(struct drm_amdgpu_cs_chunk) == 16);
static_assert(sizeof(struct drm_amdgpu_cs_chunk_ib) == 32);
static_assert(sizeof(struct drm_amdgpu_bo_list_in) == 24);
static_assert(sizeof(struct drm_amdgpu_bo_list_entry) == 8);
static_assert(sizeof(union drm_amdgpu_wait_cs) == 32);
static_assert(DRM_IOCTL_AMDGPU_CS == 0xc0186444ul);
static_assert(DRM_IOCTL_AMDGPU_WAIT_CS == 0xc0206449ul);

/// `AMDGPU_CTX_QUERY2_FLAGS_RESET_IN_PROGRESS` (Linux 6.8; bookworm's header lacks it).
inline constexpr uint64_t kCtxQuery2ResetInProgress = 1u << 5;

/// DRM's character-device major.
inline constexpr unsigned kDrmMajor = 226;
/// Render nodes are minors 128..255.
inline constexpr unsigned kFirstRenderMinor = 128;

} // namespace drm
