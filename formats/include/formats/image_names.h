#pragma once
/// \file
/// The names of every amdgpu image file, as CRIU's own amdgpu plugin names them: the one place
/// they are spelled. Backends, the plugin and the tool take them from here.

#include <cstdint>
#include <string>
#include <string_view>

namespace formats {

/// `amdgpu-kfd-<id>.img` (criu_kfd): the KFD state of criu file `id`.
std::string kfdImageName(uint32_t id);
/// `amdgpu-pages-<id>-<gpu_id as %04x>.img`: the VRAM/GTT contents of one GPU of a KFD image.
std::string kfdPagesImageName(uint32_t id, uint32_t gpuId);
/// `amdgpu-kfd-bo-<id>-<gpu_id as %04x>-<bo index %04x>.img`: the contents of one VRAM/GTT BO
/// of a KFD image, in a file of ours (compressed, encrypted or incremental checkpoints).
std::string kfdBoImageName(uint32_t id, uint32_t gpuId, uint32_t boIndex);
/// `amdgpu-renderD-<id>.img` (criu_render_node).
std::string renderNodeImageName(uint32_t id);
/// `amdgpu-drm-pages-<id>-<minor>-<bo index %04x>.img`: one render-node BO's contents.
std::string drmPagesImageName(uint32_t id, uint32_t renderMinor, uint32_t boIndex);
/// `amdgpu-dmabuf_<id>.img` (an underscore, as CRIU names it).
std::string dmabufImageName(uint32_t id);
/// `name` with our "amdgpu-" prefix replaced by `prefix` (which starts with it: "amdgpu-delta-"):
/// unchanged when it has `prefix` already or is not ours.
std::string withOurPrefix(const std::string& name, std::string_view prefix);
/// The topology saved by the render-node backend (this project's addition).
inline constexpr const char* kTopologyImageName = "amdgpu-topology.img";

} // namespace formats
