#pragma once
/// \file
/// The contents of a BO of an incremental checkpoint, assembled from its chain as a restore
/// assembles them (datapath::runRestoreLane, the newest checkpoint holding each chunk), into any
/// sink: `image verify` keeps nothing and checks the checksum, `image flatten` writes a whole file.

#include "image_catalog.h"

#include "base/result.h"
#include "content/stream.h"

namespace tools::image {

/// Moves the bytes of `f` (a contents file with a chain) into `sink`, checking them against the
/// checksum the dump recorded; errors name the file of the chain at fault.
base::Result<void> assembleContents(formats::ImageStore& store, const ContentsFile& f,
                                    content::ContentSink& sink);

} // namespace tools::image
