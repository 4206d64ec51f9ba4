#pragma once
/// \file
/// Which BOs of a dump are the same memory: the backend's section of the render-node image's
/// priv_data. Every BO that can be exported carries a share key (the inode of its dma-buf at
/// dump, the same for the exporter and every importer); one BO per key is the owner (recreated
/// with GEM_CREATE, carries the contents), the others are followers (re-imported from the owner
/// through a dma-buf at restore).

#include "hal/render_node_image.h"
#include "hal/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace drm {

/// Sharing facts of one BO.
struct BoShare {
    uint64_t key = 0;      ///< 0 = not shareable (not exportable, or an image without the section)
    bool follower = false; ///< restored by import from the owner of `key`
};

/// Encodes one entry per BO, in image order.
std::string encodeShares(const std::vector<BoShare>& shares);

/// Share key of a BO in an image of CRIU's development-branch plugin, which names a shared BO by
/// its GEM handle (the same in the exporting and the importing file): the handle, tagged so that
/// it never equals a dma-buf inode of this backend's own images.
inline constexpr uint64_t kHandleShareKeyTag = 1ull << 63;

/// Decodes priv_data of an image whose BOs are `bos`. Empty priv_data (an image of another
/// writer) follows that writer's rule: every BO is keyed by its handle, followers being the BOs
/// flagged is_import.
hal::Result<std::vector<BoShare>> decodeShares(const std::string& privData,
                                               const std::vector<hal::DrmBoEntry>& bos,
                                               const std::string& imageName);

} // namespace drm
