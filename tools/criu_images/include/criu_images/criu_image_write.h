#pragma once
/// \file
/// criu's own images written as criu writes them, with the fields criu-own-images.proto names:
/// for the tests and fuzz seeds of the readers (criu_facts.h). The tool never writes them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace criu_images {

/// inventory.img: one inventory_entry with `imgVersion` (criu writes 2) and, when `plugins` is
/// given, the plugin list (criu 4.1+; an empty list when no plugin registered).
std::string inventoryImage(const std::optional<std::vector<std::string>>& plugins,
                           uint32_t imgVersion = 2);

/// One file of files.img.
struct FileRecord {
    uint32_t type = 0; ///< criu's fd_types: 1 REG, 16 EXT (kFdTypeExt) ...
    uint32_t id = 0;
};

/// files.img: one file_entry per record, with an ext_file_entry of the same id in EXT ones.
std::string filesImage(const std::vector<FileRecord>& files);

/// ext-files.img of criu before files.img: one ext_file_entry per id.
std::string extFilesImage(const std::vector<uint32_t>& ids);

} // namespace criu_images
