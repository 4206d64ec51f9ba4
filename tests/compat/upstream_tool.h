#pragma once
/// \file
/// The suite's reference: upstream_images.c built against one generation of CRIU's amdgpu
/// plugin schema (CRIU_AMDGPU_UPSTREAM_IMAGES, set by CTest for each suite), run as a process.

#include "formats/image_store.h"

#include <map>
#include <string>
#include <vector>

namespace compat {

/// How a run of the reference tool ended.
struct ToolRun {
    int status = -1;    ///< exit status (-1: it could not be run)
    std::string output; ///< stdout and stderr
};

/// Runs `upstream-images ARGS...`; a test failure when CRIU_AMDGPU_UPSTREAM_IMAGES is unset or
/// names no program (the suite fails, never skips, without its reference).
ToolRun runUpstream(const std::vector<std::string>& args);

/// What this generation of the schema has.
struct UpstreamSchema {
    bool kfdBoHandle = false; ///< kfd_bo_entry.handle (development branch)
    bool renderBos = false;   ///< criu_render_node lists BOs (development branch)
    bool dmabuf = false;      ///< criu_dmabuf_node (development branch)
};
/// Asks the tool once.
const UpstreamSchema& upstreamSchema();

/// Writes every image of `images` into `dir`.
void writeDirectory(const std::string& dir, const std::map<std::string, std::string>& images);
/// Writes `bytes` as `dir/name`.
void writeBytes(const std::string& dir, const std::string& name, const void* bytes, size_t len);

} // namespace compat
