#pragma once
// The GPU pages files of CRIU's KFD layout (hal/bo_contents.h: GpuPagesFile), dumped, checked
// and restored: internal to the HAL's recipe (bo_contents.cpp).
#include "hal/bo_contents.h"

#include "base/result.h"

namespace hal {

/// Before any GPU is touched: `lane`'s pages file exists with the size header and size of its
/// BOs (a stream can be read once: the copy checks it on the way).
Result<void> checkGpuPagesFile(ImageStore& store, const ContentsLane& lane);

/// Dumps the BOs of `lane` into its pages file; fills in the lane's bytes and checksum.
Result<void> saveGpuPagesFile(ImageStore& store, ContentsLane& lane, bool holes);

/// Restores the BOs of `lane` from its pages file, checked against the lane's checksum.
Result<void> restoreGpuPagesFile(ImageStore& store, ContentsLane& lane);

} // namespace hal
