#pragma once
/// \file
/// What criu's own images in a checkpoint directory tell about the dump: whether criu finished
/// it (criu writes inventory.img last), which plugins registered (the inventory's plugin list,
/// criu 4.1+), and which external files a plugin had to dump (files.img entries of type EXT, or
/// ext-files.img of older criu). Only the fields criu-own-images.proto names are read.

#include "criu_images/image_framing.h"

#include "base/result.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace criu_images {

/// criu's fd_types value EXT: a file that a plugin dumps (DUMP_EXT_FILE).
inline constexpr uint32_t kFdTypeExt = 16;
/// The name of criu's inventory image.
inline constexpr const char* kInventoryImage = "inventory.img";
/// The image that lists every file of the dump (criu 3.x and later).
inline constexpr const char* kFilesImage = "files.img";
/// The image of external files of criu before files.img.
inline constexpr const char* kExtFilesImage = "ext-files.img";

/// What inventory.img says.
struct Inventory {
    uint32_t imgVersion = 0;
    /// The plugins that registered at dump; nullopt when the image has no plugin list (criu
    /// before 4.1 writes none).
    std::optional<std::vector<std::string>> plugins;
    /// True when the plugin list names `plugin`.
    bool lists(const std::string& plugin) const;
};

/// Decodes inventory.img (`name`, already split by parseFramedImage): one inventory_entry.
base::Result<Inventory> decodeInventory(const std::string& name, const FramedImage& image);

/// The ids of the external files of files.img (its entries of type EXT) or of ext-files.img,
/// told apart by their magic. The error names the image, the entry and its offset.
base::Result<std::set<uint32_t>> decodeExternalFiles(const std::string& name,
                                                     const FramedImage& image);

/// criu's images of a directory, as far as they were read.
struct CriuFacts {
    std::vector<std::string> images; ///< every file that starts with a criu magic, sorted
    /// Empty *.img files not of the plugin (criu opens an image, buffers it and writes it when
    /// it is done with it: a criu killed mid-dump leaves these), sorted.
    std::vector<std::string> unwritten;
    std::optional<Inventory> inventory;              ///< when inventory.img is present and decodes
    std::optional<std::set<uint32_t>> externalFiles; ///< when files.img or ext-files.img decodes
    std::string externalFilesImage;                  ///< the image externalFiles came from
    std::vector<std::pair<std::string, std::string>> errors; ///< image, why it cannot be read
    bool has(const std::string& image) const;
};

/// Reads criu's images of `dir` (files named amdgpu-* are the plugin's and are skipped). Never
/// fails: what cannot be read is in `errors`.
CriuFacts readCriuFacts(const std::string& dir);

} // namespace criu_images
