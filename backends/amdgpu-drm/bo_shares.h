#pragma once
/// \file
/// Which BOs of a dump are the same memory: the backend's section of the render-node image's
/// priv_data. Every BO that can be exported carries a share key (the inode of its dma-buf at
/// dump, the same for the exporter and every importer); one BO per key is the owner (recreated
/// with GEM_CREATE, carries the contents), the others are followers (re-imported from the owner
/// through a dma-buf at restore).

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

/// Decodes priv_data of an image with `boCount` BOs. Empty priv_data (an image of another writer)
/// gives key 0 for every BO, followers being the BOs flagged `isImport`.
hal::Result<std::vector<BoShare>> decodeShares(const std::string& privData,
                                               const std::vector<bool>& isImport,
                                               const std::string& imageName);

} // namespace drm
