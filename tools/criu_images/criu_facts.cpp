#include "criu_images/criu_facts.h"

#include "formats/proto_image.h"

#include "criu-own-images.pb-c.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace criu_images {
namespace {

// inventory.img and files.img hold small records; a larger file is not criu's.
constexpr uint64_t kMaxImageBytes = 256ull << 20;

hal::Result<std::string> readWhole(const std::filesystem::path& path) {
    std::error_code ec;
    uint64_t size = std::filesystem::file_size(path, ec);
    if (ec)
        return hal::makeError(hal::ErrorCode::Io, "%s: cannot be read: %s",
                              path.filename().c_str(), ec.message().c_str());
    if (size > kMaxImageBytes)
        return hal::makeError(hal::ErrorCode::Image, "%s: %llu bytes, more than criu writes there",
                              path.filename().c_str(), static_cast<unsigned long long>(size));
    std::ifstream in(path, std::ios::binary);
    std::string bytes(size, '\0');
    if (!in.read(bytes.data(), static_cast<std::streamsize>(size)))
        return hal::makeError(hal::ErrorCode::Io, "%s: cannot be read", path.filename().c_str());
    return bytes;
}

bool startsWithCriuMagic(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    uint32_t word = 0;
    return in.read(reinterpret_cast<char*>(&word), sizeof(word)) && isCriuMagic(word);
}

/// "NAME: entry N (at offset X)", for messages about one entry.
std::string entryName(const std::string& name, const Entry& e, size_t index) {
    return hal::strFormat("%s: entry %zu (at offset %llu)", name.c_str(), index + 1,
                          static_cast<unsigned long long>(e.offset));
}

/// Unpacks entry `index` of image `name` as `descriptor`.
template <class T>
hal::Result<hal::UniqueProto<T>> unpackEntry(const std::string& name, const Entry& e, size_t index,
                                             const ProtobufCMessageDescriptor* descriptor) {
    return hal::unpackProto<T>(e.bytes, descriptor, entryName(name, e, index));
}

/// Reads and splits image `name` of `dir` and hands it to `decode`; what fails goes to
/// facts.errors.
template <class Decode>
void decodeImage(const std::string& dir, const std::string& name, CriuFacts& facts, Decode decode) {
    auto bytes = readWhole(std::filesystem::path(dir) / name);
    if (!bytes) {
        facts.errors.push_back({name, bytes.error().describe()});
        return;
    }
    auto image = parseFramedImage(name, *bytes);
    hal::Result<void> decoded = image ? decode(*image) : hal::Result<void>(image.error());
    if (!decoded)
        facts.errors.push_back({name, decoded.error().describe()});
}

} // namespace

bool Inventory::lists(const std::string& plugin) const {
    return plugins && std::find(plugins->begin(), plugins->end(), plugin) != plugins->end();
}

bool CriuFacts::has(const std::string& image) const {
    return std::binary_search(images.begin(), images.end(), image);
}

hal::Result<Inventory> decodeInventory(const std::string& name, const FramedImage& image) {
    if (image.magic != kInventoryMagic)
        return hal::makeError(hal::ErrorCode::Image, "%s: magic 0x%08x is not the inventory's 0x%08x",
                              name.c_str(), image.magic, kInventoryMagic);
    if (image.entries.size() != 1)
        return hal::makeError(hal::ErrorCode::Image,
                              "%s: %zu entries, criu writes exactly one inventory_entry",
                              name.c_str(), image.entries.size());
    HAL_TRY_ASSIGN(auto msg, unpackEntry<CriuOwn__InventoryEntry>(
                                 name, image.entries[0], 0, &criu_own__inventory_entry__descriptor));
    if (!msg->has_img_version)
        return hal::makeError(hal::ErrorCode::Image, "%s: no img_version (field 1), which criu requires",
                              entryName(name, image.entries[0], 0).c_str());
    Inventory inv;
    inv.imgVersion = msg->img_version;
    if (msg->plugins_entry)
        inv.plugins.emplace(msg->plugins_entry->plugins,
                            msg->plugins_entry->plugins + msg->plugins_entry->n_plugins);
    return inv;
}

hal::Result<std::set<uint32_t>> decodeExternalFiles(const std::string& name,
                                                    const FramedImage& image) {
    if (image.magic != kFilesMagic && image.magic != kExtFilesMagic)
        return hal::makeError(hal::ErrorCode::Image,
                              "%s: magic 0x%08x is neither files.img's 0x%08x nor ext-files.img's "
                              "0x%08x",
                              name.c_str(), image.magic, kFilesMagic, kExtFilesMagic);
    std::set<uint32_t> ids;
    for (size_t i = 0; i < image.entries.size(); ++i) {
        const Entry& e = image.entries[i];
        if (image.magic == kExtFilesMagic) {
            HAL_TRY_ASSIGN(auto ext, unpackEntry<CriuOwn__ExtFileEntry>(
                                         name, e, i, &criu_own__ext_file_entry__descriptor));
            if (!ext->has_id)
                return hal::makeError(hal::ErrorCode::Image, "%s: no id (field 1), which criu requires",
                                      entryName(name, e, i).c_str());
            ids.insert(ext->id);
            continue;
        }
        HAL_TRY_ASSIGN(auto file, unpackEntry<CriuOwn__FileEntry>(name, e, i,
                                                                   &criu_own__file_entry__descriptor));
        if (!file->has_type || !file->has_id)
            return hal::makeError(hal::ErrorCode::Image,
                                  "%s: no type (field 1) or id (field 2), which criu requires",
                                  entryName(name, e, i).c_str());
        if (file->type == kFdTypeExt)
            ids.insert(file->id);
    }
    return ids;
}

CriuFacts readCriuFacts(const std::string& dir) {
    CriuFacts facts;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        std::string name = entry.path().filename().string();
        std::error_code typeEc;
        if (name.rfind("amdgpu-", 0) == 0 || !entry.is_regular_file(typeEc))
            continue;
        if (startsWithCriuMagic(entry.path()))
            facts.images.push_back(name);
    }
    if (ec)
        facts.errors.push_back({dir, "cannot be listed: " + ec.message()});
    std::sort(facts.images.begin(), facts.images.end());

    if (facts.has(kInventoryImage))
        decodeImage(dir, kInventoryImage, facts, [&](const FramedImage& image) -> hal::Result<void> {
            HAL_TRY_ASSIGN(facts.inventory, decodeInventory(kInventoryImage, image));
            return {};
        });
    for (const char* name : {kFilesImage, kExtFilesImage})
        if (facts.has(name)) {
            decodeImage(dir, name, facts, [&](const FramedImage& image) -> hal::Result<void> {
                HAL_TRY_ASSIGN(facts.externalFiles, decodeExternalFiles(name, image));
                facts.externalFilesImage = name;
                return {};
            });
            break;
        }
    return facts;
}

} // namespace criu_images
