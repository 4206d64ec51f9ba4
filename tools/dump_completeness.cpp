#include "dump_completeness.h"

#include <set>
#include <string>
#include <type_traits>

namespace tools::image {
namespace {

using criu_images::CriuFacts;

/// The criu file ids that have an amdgpu image of their own (decodable or not).
std::set<uint32_t> idsWithImages(const Checkpoint& c) {
    std::set<uint32_t> ids;
    for (const auto& d : c.kfd)
        ids.insert(d.id);
    for (const auto& d : c.render)
        ids.insert(d.id);
    for (const auto& d : c.dmabuf)
        ids.insert(d.id);
    return ids;
}

template <class List> std::string joined(const List& items, const char* none) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty())
            out += ", ";
        if constexpr (std::is_same_v<std::decay_t<decltype(item)>, std::string>)
            out += item;
        else
            out += std::to_string(item);
    }
    return out.empty() ? none : out;
}

/// The error text without the leading "FILE: " that the file field already says.
std::string withoutName(const std::string& file, const std::string& why) {
    std::string prefix = file + ": ";
    return why.rfind(prefix, 0) == 0 ? why.substr(prefix.size()) : why;
}

/// The images an external file `id` would have, had the plugin dumped it.
std::string imagesOf(uint32_t id) {
    return formats::kfdImageName(id) + ", " + formats::renderNodeImageName(id) + " or " +
           formats::dmabufImageName(id);
}

/// Every external file of files.img has its amdgpu image, where the dump's plugin list (or the
/// amdgpu images beside it) says they are this plugin's; each image is one criu asks for.
void checkExternalFiles(const Checkpoint& c, const CriuFacts& criu, Completeness& out) {
    const std::set<uint32_t>& ext = *criu.externalFiles;
    const std::string& source = criu.externalFilesImage;
    std::set<uint32_t> have = idsWithImages(c);
    std::set<uint32_t> without;
    for (uint32_t id : ext)
        if (!have.count(id))
            without.insert(id);
    const auto& inv = criu.inventory;
    bool listed = inv && inv->plugins;
    bool ours = inv && inv->lists(kInventoryPluginName);
    bool onlyUs = ours && inv->plugins->size() == 1;
    if (!without.empty()) {
        if (onlyUs || (!listed && c.imageCount() > 0)) {
            for (uint32_t id : without)
                out.problems.push_back(
                    {imagesOf(id),
                     base::strFormat("missing: %s lists external file %u, which the "
                                     "plugin dumps into one of these, and none is here",
                                     source.c_str(), id)});
        } else if (ours) {
            out.notes.push_back(base::strFormat(
                "%s lists external file(s) %s without an amdgpu image; inventory.img also lists "
                "%s, whose they may be",
                source.c_str(), joined(without, "").c_str(), joined(*inv->plugins, "").c_str()));
        } else if (!listed) {
            out.notes.push_back(base::strFormat(
                "%s lists external file(s) %s and none has an amdgpu image; without a plugin list "
                "in inventory.img (criu before 4.1) they may be another plugin's",
                source.c_str(), joined(without, "").c_str()));
        }
    }
    for (uint32_t id : have)
        if (!ext.count(id))
            out.notes.push_back(base::strFormat("%s has no external file %u: criu's restore will "
                                                "not ask for its amdgpu image",
                                                source.c_str(), id));
    out.notes.push_back(base::strFormat("checked against criu's %s: %zu external file(s)%s%s",
                                        source.c_str(), ext.size(), ext.empty() ? "" : ": ",
                                        joined(ext, "").c_str()));
}

/// What the inventory says about the plugin, against the amdgpu images that are here.
void checkInventory(const Checkpoint& c, const CriuFacts& criu, Completeness& out) {
    size_t images = c.imageCount();
    if (!criu.has(criu_images::kInventoryImage)) {
        out.problems.push_back(
            {criu_images::kInventoryImage,
             "missing, but criu's other images are here (" + joined(criu.images, "") +
                 "): criu writes inventory.img last, so its dump did not finish"});
        return;
    }
    const auto& inv = criu.inventory;
    if (!inv)
        return; // undecodable: among criu.errors
    if (!inv->plugins) {
        out.notes.push_back("inventory.img has no plugin list (criu before 4.1 writes none): "
                            "whether the dump used amdgpu_plugin is not recorded");
        return;
    }
    std::string plugins = joined(*inv->plugins, "no plugin");
    bool ours = inv->lists(kInventoryPluginName);
    if (ours && images == 0)
        out.problems.push_back(
            {criu_images::kInventoryImage,
             base::strFormat("lists %s among the plugins the dump used, but there is no amdgpu "
                             "image (amdgpu-*.img) in %s: the plugin's images were removed or "
                             "never written",
                             kInventoryPluginName, c.dir.c_str())});
    else if (!ours && images > 0)
        out.problems.push_back(
            {criu_images::kInventoryImage,
             base::strFormat("does not list %s (it lists %s), yet %zu amdgpu image(s) are here: "
                             "criu restores with the plugins it lists, so the GPU state would "
                             "not be restored",
                             kInventoryPluginName, plugins.c_str(), images)});
    out.notes.push_back("checked against criu's inventory.img: the dump finished, plugins: " +
                        plugins);
}

} // namespace

Completeness checkCompleteness(const Checkpoint& c, const CriuFacts& criu) {
    Completeness out;
    size_t images = c.imageCount();
    if (!criu.unwritten.empty())
        out.problems.push_back(
            {joined(criu.unwritten, ""),
             "empty: criu opened these images and never wrote them: its dump was stopped (killed) "
             "before it finished"});
    if (criu.images.empty() && !criu.unwritten.empty())
        return out;
    if (criu.images.empty()) {
        if (images == 0)
            out.noGpuState = "no criu image either (no inventory.img): this is not a "
                             "checkpoint's image directory (criu dump -D DIR)";
        else
            out.notes.push_back("no criu image here (inventory.img, files.img): only the amdgpu "
                                "images were checked, not whether criu finished the dump or every "
                                "GPU file of it has its image");
        return out;
    }
    for (const auto& [file, why] : criu.errors)
        out.problems.push_back({file, "cannot be decoded: " + withoutName(file, why)});
    checkInventory(c, criu, out);
    if (criu.externalFiles)
        checkExternalFiles(c, criu, out);
    else if (!criu.has(criu_images::kFilesImage) && !criu.has(criu_images::kExtFilesImage))
        out.notes.push_back("no files.img: whether every GPU file of the dump has its amdgpu "
                            "image was not checked");
    if (images == 0 && out.problems.empty()) {
        const auto& inv = criu.inventory;
        out.noGpuState = inv && inv->plugins
                             ? "criu's images are here, and inventory.img lists no " +
                                   std::string(kInventoryPluginName) +
                                   " (plugins: " + joined(*inv->plugins, "none") +
                                   "): the dump did not use an AMD GPU"
                             : "criu's images are here, and nothing in them says the dump used an "
                               "AMD GPU (inventory.img has no plugin list: criu before 4.1)";
    }
    return out;
}

} // namespace tools::image
