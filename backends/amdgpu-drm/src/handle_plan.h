#pragma once
/// \file
/// How a restore gives every BO of a DRM file its checkpointed GEM handle without
/// GEM_CHANGE_HANDLE (disabled as unsafe in 6.18.36+, 7.0.13+ and 7.1+). The kernel hands out the
/// lowest free handle from 1 of the file (`idr_alloc(&file_priv->object_idr, NULL, 1, 0, ...)` in
/// drm_gem_handle_create_tail), for GEM_CREATE and PRIME_FD_TO_HANDLE alike. A fresh file filled
/// in ascending handle order therefore gives each BO its number, provided every handle below it
/// is taken: the BOs the file creates itself are made at their handle, every other handle (a
/// BO imported from another file or process, or a number the application had freed) first gets
/// a placeholder BO. An imported BO takes its handle later by closing its placeholder and
/// importing at once (the closed handle is then the lowest free one); the placeholders of freed
/// numbers are closed when every import of the file is in.

#include "bo_shares.h"

#include "base/result.h"
#include "formats/render_node_image.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace drm {

/// The highest handle the kernel hands out (idr_alloc's end 0 means INT_MAX).
inline constexpr uint32_t kHighestGemHandle = 0x7fffffffu;
/// At most this many placeholder BOs fill the unused handles of one file (each is a page of
/// system memory while the file is restored).
inline constexpr uint32_t kMaxHandleGaps = 1u << 16;

/// Size of a placeholder BO (GEM_CREATE in AMDGPU_GEM_DOMAIN_CPU: system memory, never mapped).
inline constexpr uint64_t kPlaceholderBytes = 4096;

/// A kind of numbered object of a DRM file the kernel numbers lowest-free-from-1 (GEM handles,
/// context ids, syncobj handles), as the errors about its table name it.
struct NumberedKind {
    const char* field;   ///< the image's list of them: "bo_entries"
    const char* object;  ///< "BO"
    const char* number;  ///< "GEM handle"
    const char* plural;  ///< "handles"
    const char* fillers; ///< "placeholder BOs"
    uint32_t highest;    ///< the highest number the kernel hands out
    uint32_t maxGaps;    ///< the most unused numbers below the highest a restore fills
    uint32_t maxObjects; ///< the most objects of the kind a restore makes in one file
};

/// The number table of one kind of object of a file: for each number 1..highest, the index (in
/// `numbers`) of the object at it, or nothing for an unused number (a filler at restore). An
/// Image error naming `imageName`, the object and its number when the kernel cannot reproduce
/// the table: number 0, a number used twice, a number above `kind.highest`, more than
/// `kind.maxGaps` unused numbers below the highest, or more than `kind.maxObjects` objects.
base::Result<std::vector<std::optional<uint32_t>>> planNumbers(const std::vector<uint32_t>& numbers,
                                                               const NumberedKind& kind,
                                                               const std::string& imageName);

/// What the restore puts at one handle of a file.
enum class HandleUse {
    Create,      ///< a BO this file owns: GEM_CREATE with the image's placement
    Import,      ///< a BO whose memory another BO owns: a placeholder, then the import
    Placeholder, ///< a number the application had freed: a placeholder, closed at the end
};

/// One handle of the plan: handle number `handle`, BO `bo` of the image (Create, Import).
struct HandleSlot {
    uint32_t handle = 0;
    HandleUse use = HandleUse::Placeholder;
    uint32_t bo = 0;
};

/// The handles 1..highest of the file of `bos` (`shares` in the same order), ascending. An Image
/// error naming `imageName`, the BO and the handle when the kernel cannot reproduce the table:
/// handle 0, a handle used twice, a handle above kHighestGemHandle, or more than kMaxHandleGaps
/// unused handles below the highest.
base::Result<std::vector<HandleSlot>> planHandles(const std::vector<formats::DrmBoEntry>& bos,
                                                  const std::vector<BoShare>& shares,
                                                  const std::string& imageName);

} // namespace drm
