#pragma once
/// \file
/// The GPU contexts (DRM_IOCTL_AMDGPU_CTX) and syncobjs (DRM_IOCTL_SYNCOBJ_*) of a render-node
/// file: found at dump, recreated at restore with their numbers and state.
///
/// No uapi lists them (up to 7.2), so the dump finds them as the kernel lets it: it asks a
/// harmless question of every number from 1 up (AMDGPU_CTX_OP_QUERY_STATE2, EINVAL for an id the
/// file does not hold; SYNCOBJ_QUERY, ENOENT for a handle it does not hold) and stops once more
/// numbers were unused than a restore fills (kMaxObjectGaps): an object above that many unused
/// numbers could not be recreated at its number anyway. The kernel hands out both lowest free
/// first (contexts: idr_alloc_u32 from 1 in amdgpu_ctx_alloc; syncobjs: idr_alloc(.., 1, 0, ..)
/// in drm_syncobj_get_handle), so the restore fills a fresh file in ascending order as it does
/// GEM handles (handle_plan.h) and frees the fillers.

#include "drm_calls.h"
#include "handle_plan.h"

#include "base/result.h"
#include "formats/render_node_image.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace drm {

/// At most this many unused numbers below the highest context id, and below the highest syncobj
/// handle, of one file: the dump probes no further, the restore makes no more fillers.
inline constexpr uint32_t kMaxObjectGaps = 4096;
/// At most this many contexts, and syncobjs, per file.
inline constexpr uint32_t kMaxObjectsPerFile = 1u << 20;

/// Context ids: idr_alloc_u32(.., 1, UINT_MAX) in amdgpu_ctx_alloc.
inline constexpr NumberedKind kContextIds{"ctx_entries",  "context",         "id",
                                          "ids",          "filler contexts", 0xffffffffu,
                                          kMaxObjectGaps, kMaxObjectsPerFile};
/// Syncobj handles: idr_alloc(.., 1, 0 = INT_MAX) in drm_syncobj_get_handle.
inline constexpr NumberedKind kSyncobjHandles{"syncobj_entries", "syncobj",         "handle",
                                              "handles",         "filler syncobjs", 0x7fffffffu,
                                              kMaxObjectGaps,    kMaxObjectsPerFile};

/// The QUERY_STATE2 flags of a context a new one would not reproduce: the kernel reports it
/// reset, guilty, VRAM-lost or in a reset (the RAS flags are notices, not state).
inline constexpr uint64_t kLostContextFlags =
    AMDGPU_CTX_QUERY2_FLAGS_RESET | AMDGPU_CTX_QUERY2_FLAGS_VRAMLOST |
    AMDGPU_CTX_QUERY2_FLAGS_GUILTY | kCtxQuery2ResetInProgress;

/// Every context of the DRM file `fd` (described as `file` in errors). A NotSupported error
/// naming the file and the context when one is lost (kLostContextFlags).
base::Result<std::vector<formats::DrmCtxEntry>> findContexts(DrmCalls& calls, int fd,
                                                             const std::string& file);

/// Every syncobj of the DRM file `fd` and its state: a timeline's value once the points
/// submitted are signaled, else whether it holds a signaled fence. Fences still pending are
/// waited for until `deadlineNs` (monotonic); a Kernel error naming the file and the syncobj when
/// one is still pending then.
base::Result<std::vector<formats::DrmSyncobjEntry>>
findSyncobjs(DrmCalls& calls, int fd, const std::string& file, uint64_t deadlineNs);

/// How the restore numbers the contexts and syncobjs of an image (planNumbers of each), checked
/// before any GPU is touched: an Image error naming the image, the object and its field.
struct FileObjectsPlan {
    std::vector<std::optional<uint32_t>> contexts;
    std::vector<std::optional<uint32_t>> syncobjs;
};
base::Result<FileObjectsPlan> planFileObjects(const formats::RenderNodeImage& image,
                                              const std::string& imageName);

/// Recreates the contexts and syncobjs of `image` in the fresh DRM file `fd` by `plan`, each at
/// its number and in its state, and frees the fillers.
base::Result<void> restoreFileObjects(DrmCalls& calls, int fd,
                                      const formats::RenderNodeImage& image,
                                      const FileObjectsPlan& plan, const std::string& imageName);

} // namespace drm
