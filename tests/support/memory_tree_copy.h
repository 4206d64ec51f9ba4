#pragma once
/// \file
/// A tree on disk copied into a topology::sysfs::MemoryTree under the same absolute paths (links
/// kept as links, with their targets as written), so that a reader can be run on both and the
/// readings compared: absolute link targets resolve the same in both.

#include "topology/sysfs_tree.h"

#include <string>

namespace testsupport {

/// Adds every directory, regular file and symbolic link (not followed) under `dir`, and `dir`
/// itself, to `tree`; "" or what could not be read or added.
std::string copyIntoMemory(topology::sysfs::MemoryTree* tree, const std::string& dir);

} // namespace testsupport
