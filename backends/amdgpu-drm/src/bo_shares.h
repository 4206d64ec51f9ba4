#pragma once
/// \file
/// Which BOs of a dump are the same memory, as the render-node image records it
/// (drm_bo_entry.share_key/share_follower, formats::BoSharing). Every BO that can be exported
/// carries a share key (the inode of its dma-buf at dump, the same for the exporter and every
/// importer); one BO per key is the owner (recreated with GEM_CREATE, carries the contents), the
/// others are followers (re-imported from the owner through a dma-buf at restore).

#include "base/result.h"
#include "formats/render_node_image.h"

#include <cstdint>
#include <string>
#include <vector>

namespace drm {

/// Sharing facts of one BO (key 0: not shareable).
using BoShare = formats::BoSharing;

/// Share key of a BO in an image of CRIU's development-branch plugin, which names a shared BO by
/// its GEM handle (the same in the exporting and the importing file): the handle, tagged so that
/// it never equals a dma-buf inode of this backend's own images.
inline constexpr uint64_t kHandleShareKeyTag = 1ull << 63;

/// The sharing facts of every BO of `image`, in image order. An image without them (another
/// writer's) follows that writer's rule: every BO is keyed by its handle, followers being the BOs
/// flagged is_import. An Image error naming `imageName` when only some BOs carry them, when a
/// follower has no key, or when the image carries priv_data (this backend writes none: the image
/// came from another backend or from a development build that kept sharing there as text).
base::Result<std::vector<BoShare>> sharesOf(const formats::RenderNodeImage& image,
                                            const std::string& imageName);

} // namespace drm
