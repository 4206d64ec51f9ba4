#include "criu_images/criu_facts.h"

#include "formats/image_store.h"
#include "formats/proto_image.h"

#include "criu-own-images.pb-c.h"

#include <algorithm>

namespace criu_images {
namespace {

// inventory.img and files.img hold small records (a process of 100,000 files writes a few MiB);
// a larger file is not criu's.
constexpr uint64_t kMaxImageBytes = 64ull << 20;

/// The image `name` of `store` whole: opened as hostile input (formats/image_open.h), so a link, a
/// FIFO or a device node under criu's name is refused, never read.
base::Result<std::string> readWhole(formats::ImageStore& store, const std::string& name) {
    HAL_TRY_ASSIGN(auto reader, store.openRead(name));
    int64_t size = reader->size();
    if (size < 0 || static_cast<uint64_t>(size) > kMaxImageBytes)
        return base::makeError(base::ErrorCode::Image,
                               "%s: %lld bytes, more than the %llu MiB criu writes there",
                               name.c_str(), static_cast<long long>(size),
                               static_cast<unsigned long long>(kMaxImageBytes >> 20));
    std::string bytes(static_cast<size_t>(size), '\0');
    HAL_TRY(reader->readExact(std::as_writable_bytes(std::span(bytes.data(), bytes.size()))));
    return bytes;
}

bool startsWithCriuMagic(formats::ImageReader& reader) {
    uint32_t word = 0;
    return reader.readExact(std::as_writable_bytes(std::span(&word, 1))).ok() && isCriuMagic(word);
}

/// "NAME: entry N (at offset X)", for messages about one entry.
std::string entryName(const std::string& name, const Entry& e, size_t index) {
    return base::strFormat("%s: entry %zu (at offset %llu)", name.c_str(), index + 1,
                           static_cast<unsigned long long>(e.offset));
}

/// Unpacks entry `index` of image `name` as `descriptor`.
template <class T>
base::Result<formats::UniqueProto<T>> unpackEntry(const std::string& name, const Entry& e,
                                                  size_t index,
                                                  const ProtobufCMessageDescriptor* descriptor) {
    return formats::unpackProto<T>(e.bytes, descriptor, entryName(name, e, index));
}

/// Reads and splits image `name` of `store` and hands it to `decode`; what fails goes to
/// facts.errors.
template <class Decode>
void decodeImage(formats::ImageStore& store, const std::string& name, CriuFacts& facts,
                 Decode decode) {
    auto bytes = readWhole(store, name);
    if (!bytes) {
        facts.errors.push_back({name, bytes.error().describe()});
        return;
    }
    auto image = parseFramedImage(name, *bytes);
    base::Result<void> decoded = image ? decode(*image) : base::Result<void>(image.error());
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

base::Result<Inventory> decodeInventory(const std::string& name, const FramedImage& image) {
    if (image.magic != kInventoryMagic)
        return base::makeError(base::ErrorCode::Image,
                               "%s: magic 0x%08x is not the inventory's 0x%08x", name.c_str(),
                               image.magic, kInventoryMagic);
    if (image.entries.size() != 1)
        return base::makeError(base::ErrorCode::Image,
                               "%s: %zu entries, criu writes exactly one inventory_entry",
                               name.c_str(), image.entries.size());
    HAL_TRY_ASSIGN(auto msg,
                   unpackEntry<CriuOwn__InventoryEntry>(name, image.entries[0], 0,
                                                        &criu_own__inventory_entry__descriptor));
    if (!msg->has_img_version)
        return base::makeError(base::ErrorCode::Image,
                               "%s: no img_version (field 1), which criu requires",
                               entryName(name, image.entries[0], 0).c_str());
    Inventory inv;
    inv.imgVersion = msg->img_version;
    if (msg->plugins_entry)
        inv.plugins.emplace(msg->plugins_entry->plugins,
                            msg->plugins_entry->plugins + msg->plugins_entry->n_plugins);
    return inv;
}

base::Result<std::set<uint32_t>> decodeExternalFiles(const std::string& name,
                                                     const FramedImage& image) {
    if (image.magic != kFilesMagic && image.magic != kExtFilesMagic)
        return base::makeError(base::ErrorCode::Image,
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
                return base::makeError(base::ErrorCode::Image,
                                       "%s: no id (field 1), which criu requires",
                                       entryName(name, e, i).c_str());
            ids.insert(ext->id);
            continue;
        }
        HAL_TRY_ASSIGN(auto file, unpackEntry<CriuOwn__FileEntry>(
                                      name, e, i, &criu_own__file_entry__descriptor));
        if (!file->has_type || !file->has_id)
            return base::makeError(base::ErrorCode::Image,
                                   "%s: no type (field 1) or id (field 2), which criu requires",
                                   entryName(name, e, i).c_str());
        if (file->type == kFdTypeExt)
            ids.insert(file->id);
    }
    return ids;
}

CriuFacts readCriuFacts(const std::string& dir) {
    CriuFacts facts;
    auto store = formats::openDirectoryStore(dir);
    base::Result<std::vector<std::string>> names =
        store ? (*store)->listDirectory(".")
              : base::Result<std::vector<std::string>>(store.error());
    if (!names) {
        facts.errors.push_back({dir, "cannot be listed: " + names.error().message()});
        return facts;
    }
    for (const std::string& name : *names) {
        if (name.rfind("amdgpu-", 0) == 0)
            continue;
        auto reader = (*store)->openRead(name); // regular files only, no link followed
        if (!reader)
            continue;
        if (startsWithCriuMagic(**reader))
            facts.images.push_back(name);
        else if (name.size() > 4 && name.compare(name.size() - 4, 4, ".img") == 0 &&
                 (*reader)->size() == 0)
            facts.unwritten.push_back(name);
    }
    std::sort(facts.images.begin(), facts.images.end());
    std::sort(facts.unwritten.begin(), facts.unwritten.end());

    if (facts.has(kInventoryImage))
        decodeImage(**store, kInventoryImage, facts,
                    [&](const FramedImage& image) -> base::Result<void> {
                        HAL_TRY_ASSIGN(facts.inventory, decodeInventory(kInventoryImage, image));
                        return {};
                    });
    for (const char* name : {kFilesImage, kExtFilesImage})
        if (facts.has(name)) {
            decodeImage(**store, name, facts, [&](const FramedImage& image) -> base::Result<void> {
                HAL_TRY_ASSIGN(facts.externalFiles, decodeExternalFiles(name, image));
                facts.externalFilesImage = name;
                return {};
            });
            break;
        }
    return facts;
}

} // namespace criu_images
