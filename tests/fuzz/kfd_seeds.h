#pragma once
/// \file
/// Checkpoints of the KFD backend's image layout written by its own writers, for seeds.

#include "fuzz_support.h"

#include <vector>

namespace fuzzsupport {

/// Stores holding amdgpu-kfd-1.img (one or two GPUs, BOs in VRAM, GTT and neither, checksums
/// or not) and its pages files.
std::vector<MemoryStore> kfdSeedStores();

} // namespace fuzzsupport
