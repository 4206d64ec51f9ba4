#pragma once
/// \file
/// Whether a checkpoint directory holds the whole of a dump, as far as criu's own images tell:
/// criu finished the dump (inventory.img, which criu writes last), the plugin registered
/// (the inventory's plugin list, criu 4.1+), and every external file criu handed to a plugin
/// (files.img, type EXT) has its amdgpu image. What criu's images cannot tell is said in notes.

#include "image_catalog.h"

#include "criu_images/criu_facts.h"

#include <string>
#include <vector>

namespace tools::image {

/// The name the plugin registers under in criu's inventory (CRIU's own plugin's too).
inline constexpr const char* kInventoryPluginName = "amdgpu_plugin";

/// One thing missing or wrong, named by the file it is about.
struct Missing {
    std::string file;
    std::string what;
};

/// The answer for one directory.
struct Completeness {
    std::vector<Missing> problems;  ///< the checkpoint is damaged when there is one
    std::vector<std::string> notes; ///< what could not be checked, and why
    /// When there is no amdgpu image and no problem: why, in words ("no criu image either: ...").
    std::string noGpuState;
};

/// Checks `c` (the amdgpu images) against `criu` (criu's images of the same directory).
Completeness checkCompleteness(const Checkpoint& c, const criu_images::CriuFacts& criu);

} // namespace tools::image
