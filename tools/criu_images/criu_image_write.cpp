#include "criu_images/criu_image_write.h"

#include "criu_images/criu_facts.h"
#include "criu_images/image_framing.h"

#include "formats/proto_image.h"

#include "criu-own-images.pb-c.h"

namespace criu_images {

std::string inventoryImage(const std::optional<std::vector<std::string>>& plugins,
                           uint32_t imgVersion) {
    CriuOwn__InventoryEntry inv;
    criu_own__inventory_entry__init(&inv);
    inv.has_img_version = true;
    inv.img_version = imgVersion;
    CriuOwn__PluginsEntry list;
    criu_own__plugins_entry__init(&list);
    std::vector<char*> names;
    if (plugins) {
        for (const std::string& p : *plugins)
            names.push_back(const_cast<char*>(p.c_str()));
        list.n_plugins = names.size();
        list.plugins = names.data();
        inv.plugins_entry = &list;
    }
    return frameImage(0, kInventoryMagic, {formats::packProto(&inv.base)});
}

std::string filesImage(const std::vector<FileRecord>& files) {
    std::vector<std::string> entries;
    for (const FileRecord& f : files) {
        CriuOwn__FileEntry file;
        criu_own__file_entry__init(&file);
        file.has_type = file.has_id = true;
        file.type = f.type;
        file.id = f.id;
        CriuOwn__ExtFileEntry ext;
        criu_own__ext_file_entry__init(&ext);
        ext.has_id = true;
        ext.id = f.id;
        if (f.type == kFdTypeExt)
            file.ext = &ext;
        entries.push_back(formats::packProto(&file.base));
    }
    return frameImage(kCommonMagic, kFilesMagic, entries);
}

std::string extFilesImage(const std::vector<uint32_t>& ids) {
    std::vector<std::string> entries;
    for (uint32_t id : ids) {
        CriuOwn__ExtFileEntry ext;
        criu_own__ext_file_entry__init(&ext);
        ext.has_id = true;
        ext.id = id;
        entries.push_back(formats::packProto(&ext.base));
    }
    return frameImage(kCommonMagic, kExtFilesMagic, entries);
}

} // namespace criu_images
