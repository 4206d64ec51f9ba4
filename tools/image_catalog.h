#pragma once
/// \file
/// An amdgpu checkpoint directory as `criu-amdgpu image` sees it: every amdgpu image in it,
/// decoded by the readers the backends restore with (kfd::readKfdImage,
/// formats::readRenderNodeImage, formats::readDmabufImage, formats::readTopologyImage), the
/// contents files the images call for, and the files that are missing or left over. Nothing here
/// parses an image format itself.

#include "base/result.h"
#include "config/config.h"
#include "content/digest.h"
#include "datapath/image_increment.h"
#include "formats/content_keys.h"
#include "formats/dmabuf_image.h"
#include "formats/image_store.h"
#include "formats/render_node_image.h"
#include "formats/seal_image.h"
#include "kfd/kfd_images.h"
#include "topology/topology.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tools::image {

/// One decoded image, or why it could not be decoded.
template <class T> struct Decoded {
    std::string name; ///< the image file
    uint32_t id = 0;  ///< criu's file id in its name (0 for amdgpu-topology.img)
    std::optional<T> value;
    std::string error; ///< when value is empty: the reader's error
};

/// One BO's bytes inside a contents file.
struct BoSpan {
    std::string label;   ///< "BO 3 (handle 5)" for messages
    uint64_t offset = 0; ///< of its first byte in the file (after the 8-byte header)
    uint64_t size = 0;
};

/// A contents file an image calls for, and what it must hold.
struct ContentsFile {
    std::string name;
    std::string owner;        ///< the image that calls for it
    uint64_t bytes = 0;       ///< contents after the header
    bool headerIsSize = true; ///< the header must equal `bytes` (see verify)
    std::optional<content::ContentChecksum> checksum; ///< recorded at dump, when one was
    std::vector<BoSpan> bos;                          ///< what the contents are, in file order
    /// An incremental checkpoint's BO (datapath/image_increment.h): the chain its bytes come from,
    /// and the BO's key in it; null for contents held whole in `name`.
    std::shared_ptr<const datapath::RestoreChain> chain;
    formats::BoKey key;
    std::string plainName; ///< its name in a checkpoint that holds it whole
};

/// Who wrote a checkpoint, as far as its images tell.
struct Writer {
    std::string backend;    ///< "kfd", "amdgpu-drm", "mock", or "" when unknown
    std::string generation; ///< which plugin wrote it, in words
};

/// A checkpoint directory, decoded.
struct Checkpoint {
    std::string dir;
    std::unique_ptr<formats::ImageStore> store;
    std::vector<Decoded<kfd::KfdImage>> kfd;
    std::vector<Decoded<formats::RenderNodeImage>> render;
    std::vector<Decoded<formats::DmabufImage>> dmabuf;
    std::optional<Decoded<topology::Topology>> topology; ///< amdgpu-topology.img, when present
    std::vector<ContentsFile> contents; ///< every contents file the images call for
    std::vector<std::string> missing;   ///< contents files called for but absent
    std::vector<std::string> leftover;  ///< amdgpu-* files no image calls for
    /// The chains of incremental images, by criu file id (datapath/image_increment.h).
    std::map<uint32_t, std::shared_ptr<const datapath::RestoreChain>> chains;
    std::vector<std::string> brokenChains; ///< why a chain cannot be followed, naming its file
    std::vector<Writer> writers;           ///< distinct writers of the images, in image order
    /// The key image of an encrypted checkpoint (formats/seal_image.h), when it has one.
    std::optional<formats::SealImage> seal;
    std::string sealError; ///< why the key image cannot be read, when it cannot
    size_t imageCount() const {
        return kfd.size() + render.size() + dmabuf.size() + (topology ? 1 : 0);
    }
    /// True when some image could not be decoded.
    bool hasUndecodable() const;
};

/// The bytes of metadata images (KFD, render-node, dma-buf, topology) one checkpoint may have
/// decoded, in image name order. Each image is capped (formats::kMaxProtoImageSize, unpacked within
/// formats::kMaxProtoUnpackedBytes) and its chains share formats::kMaxChainBudget, so `image`
/// commands stay within a bound on any input (tools/README.md).
inline constexpr uint64_t kMaxCheckpointMetadata = 256ull << 20;

/// Reads every amdgpu image of `dir`. An error only when `dir` cannot be listed; an image that
/// cannot be decoded is recorded with its reason.
/// `keys`: how an encrypted checkpoint's contents are opened (its private key, whether
/// checkpoints in the clear pass with one: formats/content_keys.h); the cipher is not used.
base::Result<Checkpoint> readCheckpoint(const std::string& dir,
                                        const formats::SealOptions& keys = {});

/// The options that open contents for `verify` and `check`: `key` (--key) when given, else
/// the option content-private-key, and content-allow-plaintext and content-legacy-key-wrap.
formats::SealOptions keyOptionsOf(const settings::Settings& settings, const std::string& key);

/// The writer of a KFD image: this project's kfd backend records pages checksums, CRIU's plugin
/// does not.
Writer writerOf(const kfd::KfdImage& image);
/// The writer of a render-node image (the mock backend's state, the amdgpu-drm backend's
/// checksums, CRIU's plugin before and after render-node BOs).
Writer writerOf(const formats::RenderNodeImage& image);

/// "VRAM", "GTT", "CPU" ... from amdgpu GEM domain bits, joined by '|' ("-" when none).
std::string gemDomainNames(uint32_t domains);

/// The mock backend's record of one render node's queues and events, when it wrote the image.
struct MockObjects {
    size_t queues = 0;
    size_t events = 0;
    int ownerPid = 0; ///< the process that held the device at dump
};
std::optional<MockObjects> mockObjectsOf(const formats::RenderNodeImage& image);

} // namespace tools::image
