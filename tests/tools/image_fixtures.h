#pragma once
/// \file
/// Checkpoint directories as this project's image writers leave them, for the `image` command
/// tests: a KFD process (kfd::writeKfdImage, pages files with checksums) and a render node
/// (formats::writeRenderNodeImage, per-BO contents files, amdgpu-topology.img, a dma-buf image).

#include "content/digest.h"
#include "formats/image_names.h"
#include "formats/image_store.h"
#include "topology/synth.h"

#include <cstdint>
#include <string>

namespace imagetest {

inline constexpr uint32_t kKfdId = 5;    ///< criu file id of the KFD image
inline constexpr uint32_t kRenderId = 7; ///< criu file id of the render-node image
inline constexpr uint32_t kDmabufId = 9; ///< criu file id of the dma-buf image
inline constexpr uint32_t kRenderMinor = 129;
inline constexpr uint32_t kGpuA = 0x1000, kGpuB = 0x1111;

/// `n` bytes of a pattern that starts at `seed`.
std::string bytesOf(size_t n, uint8_t seed);
/// The checksum this project records for `data` (XXH3-64).
content::ContentChecksum checksumOf(const std::string& data);
/// Writes contents file `name` (the size header, then `data`).
void writeContents(formats::ImageStore& store, const std::string& name, const std::string& data);
/// Two synthetic GPUs with `vram` bytes of VRAM each.
topology::SyntheticSpec twoGpus(uint64_t vram = 64ull << 30);

/// amdgpu-kfd-5.img: process 4242 on GPUs A and B, a VRAM and a GTT BO on A, a userptr BO, a
/// VRAM BO on B, with checksums; and its two pages files (amdgpu-pages-5-1000.img: 12288 bytes,
/// amdgpu-pages-5-1111.img: 4096 bytes).
void writeKfdCheckpoint(formats::ImageStore& store);
/// writeKfdCheckpoint into the directory `dir`.
void writeKfdCheckpointIn(const std::string& dir);

/// amdgpu-topology.img, amdgpu-renderD-7.img (GPU B, minor 129): BO 0 VRAM (4096 bytes), BO 1
/// GTT imported from BO 0's memory (8192 bytes), BO 2 GWS (no contents), their two contents
/// files, and amdgpu-dmabuf_9.img exporting BO 0.
void writeRenderCheckpoint(formats::ImageStore& store);

} // namespace imagetest
