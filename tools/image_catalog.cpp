#include "image_catalog.h"

#include "formats/checkpoint_manifest.h"
#include "formats/content_keys.h"
#include "formats/image_tag.h"

#include "formats/packed_image.h"

#include "mockgpu/state_codec.h" // the mock backend's priv_data (mock::decodeRenderNodeState)

#include "formats/topology_codec.h"
#include "kfd/kfd_uapi.h"

#include <libdrm/amdgpu_drm.h>

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>

namespace tools::image {
namespace {

/// The criu file id in an image name of the form `<prefix><id><suffix>`.
/// The criu file id of `name` when `name` is exactly what `nameOf` calls the image of that id:
/// formats/image_names.h spells every name, this only inverts it. An id too large is no match.
std::optional<uint32_t> idIn(const std::string& name, std::string (*nameOf)(uint32_t)) {
    size_t at = name.find_first_of("0123456789");
    if (at == std::string::npos)
        return std::nullopt;
    uint32_t id = 0;
    if (std::from_chars(name.data() + at, name.data() + name.size(), id).ec != std::errc())
        return std::nullopt;
    if (nameOf(id) != name)
        return std::nullopt;
    return id;
}

/// Image `name` decoded by `read`, unless `refused` says why it is not.
template <class T, class Read>
Decoded<T> decode(const std::string& name, uint32_t id, const std::string& refused, Read read) {
    Decoded<T> d;
    d.name = name;
    d.id = id;
    if (!refused.empty()) {
        d.error = refused;
        return d;
    }
    auto r = read();
    if (r.ok())
        d.value = std::move(r).value();
    else
        d.error = r.error().describe();
    return d;
}

/// When `chain` holds the BO `key` of `f` (an incremental checkpoint's), `f` names the file this
/// checkpoint holds it in and the chain it is assembled from.
void followChain(ContentsFile& f, const std::shared_ptr<const datapath::RestoreChain>& chain,
                 const formats::BoKey& key) {
    if (!chain)
        return;
    f.key = key;
    datapath::RestoreImage assembled;
    assembled.name = f.name;
    if (chain->attach(assembled, f.key).ok()) {
        f.plainName = f.name;
        f.name = assembled.name;
        f.chain = chain;
    }
}

/// The contents files of a KFD image: one pages file per GPU, the GPU's VRAM/GTT BOs in image
/// order; a file per BO in a compressed or incremental checkpoint (kfd::ContentsLayout::PerBo).
void addKfdContents(const Decoded<kfd::KfdImage>& d,
                    const std::shared_ptr<const datapath::RestoreChain>& chain,
                    std::vector<ContentsFile>& out) {
    const kfd::KfdImage& image = *d.value;
    auto gpus = kfd::pagesOfGpus(image);
    if (!gpus.ok())
        return; // readKfdImage already refused such an image
    if (image.layout == kfd::ContentsLayout::PerBo) {
        for (const kfd::GpuPages& gpu : *gpus)
            for (size_t i : gpu.bos) {
                const kfd::BoRecord& bo = image.bos[i];
                if (bo.size == 0)
                    continue; // nothing to save, no file
                ContentsFile f;
                f.name = kfd::kfdBoImageName(d.id, gpu.gpuId, static_cast<uint32_t>(i));
                f.owner = d.name;
                f.bytes = bo.size;
                f.checksum = bo.checksum;
                f.bos.push_back({base::strFormat("BO %zu", i), 0, bo.size});
                followChain(f, chain, kfd::boKeyOf(bo));
                out.push_back(std::move(f));
            }
        return;
    }
    std::map<uint32_t, const kfd::PagesDigest*> sums;
    for (const kfd::PagesDigest& s : image.checksums)
        sums[s.gpuId] = &s;
    for (const kfd::GpuPages& gpu : *gpus) {
        ContentsFile f;
        f.name = formats::kfdPagesImageName(d.id, gpu.gpuId);
        f.owner = d.name;
        f.bytes = gpu.bytes;
        if (auto s = sums.find(gpu.gpuId); s != sums.end())
            f.checksum = s->second->checksum;
        uint64_t offset = 0;
        for (size_t i : gpu.bos) {
            f.bos.push_back({base::strFormat("BO %zu", i), offset, image.bos[i].size});
            offset += image.bos[i].size;
        }
        out.push_back(std::move(f));
    }
}

/// The per-BO contents files of a render-node image. This project's writers record a checksum
/// for exactly the BOs whose contents they saved, and announce the BO's size in the header (the
/// mock saves none for a follower of shared memory); CRIU's plugin saves the BOs in VRAM or GTT
/// that are mapped, and leaves the header undefined.
void addRenderContents(const Decoded<formats::RenderNodeImage>& d,
                       const std::shared_ptr<const datapath::RestoreChain>& chain,
                       std::vector<ContentsFile>& out) {
    const formats::RenderNodeImage& image = *d.value;
    for (uint32_t i = 0; i < image.bos.size(); ++i) {
        const formats::DrmBoEntry& bo = image.bos[i];
        bool ours = bo.checksum.has_value();
        bool upstreams = (bo.preferredDomains & (AMDGPU_GEM_DOMAIN_VRAM | AMDGPU_GEM_DOMAIN_GTT)) &&
                         !bo.vms.empty();
        bool follower = bo.sharing && bo.sharing->follower; // its contents are its owner's
        if (!ours && (!upstreams || follower))
            continue;
        ContentsFile f;
        f.name = formats::drmPagesImageName(image.id, image.renderMinor, i);
        f.owner = d.name;
        f.bytes = bo.size;
        f.headerIsSize = ours;
        f.checksum = bo.checksum;
        f.bos.push_back({base::strFormat("BO %u (handle %u)", i, bo.handle), 0, bo.size});
        followChain(f, chain, datapath::boKeyOf(image.gpuId, bo));
        out.push_back(std::move(f));
    }
}

/// Takes the size of metadata image `name` of `dir` from `left`; false when it does not fit.
/// Only what idIn recognises is decoded; a link or anything but a file is refused when it is
/// opened, so its own size (not its target's) is what counts.
bool withinBudget(const std::string& dir, const std::string& name, uint64_t& left) {
    bool metadata = idIn(name, formats::kfdImageName) || idIn(name, formats::renderNodeImageName) ||
                    idIn(name, formats::dmabufImageName) || name == formats::kTopologyImageName;
    struct stat st;
    if (!metadata || lstat((dir + "/" + name).c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return true;
    uint64_t size = static_cast<uint64_t>(st.st_size);
    if (size > left)
        return false;
    left -= size;
    return true;
}

void addWriter(std::vector<Writer>& writers, Writer w) {
    for (const Writer& seen : writers)
        if (seen.backend == w.backend && seen.generation == w.generation)
            return;
    writers.push_back(std::move(w));
}

} // namespace

bool Checkpoint::hasUndecodable() const {
    auto bad = [](const auto& list) {
        return std::any_of(list.begin(), list.end(), [](const auto& d) { return !d.value; });
    };
    return bad(kfd) || bad(render) || bad(dmabuf) || (topology && !topology->value);
}

Writer writerOf(const kfd::KfdImage& image) {
    if (image.layout == kfd::ContentsLayout::PerBo)
        return {"kfd", "criu-amdgpu (this project's kfd backend: a contents file per BO, "
                       "compressed or incremental; CRIU's plugin cannot restore it)"};
    if (!image.checksums.empty())
        return {"kfd", "criu-amdgpu (this project's kfd backend: pages checksums recorded)"};
    return {"kfd", "CRIU's own amdgpu plugin (no pages checksums)"};
}

Writer writerOf(const formats::RenderNodeImage& image) {
    if (mockObjectsOf(image))
        return {"mock", "criu-amdgpu (mock GPU backend)"};
    bool ours = std::any_of(image.bos.begin(), image.bos.end(), [](const formats::DrmBoEntry& b) {
        return b.checksum.has_value() || b.sharing.has_value();
    });
    if (ours || !image.privData.empty())
        return {"amdgpu-drm", "criu-amdgpu (amdgpu-drm backend: render-node BOs, checksums)"};
    if (!image.bos.empty())
        return {"amdgpu-drm", "CRIU's amdgpu plugin, development branch (render-node BOs)"};
    if (image.legacyGpuIdOnly)
        return {"kfd", "CRIU's amdgpu plugin 4.2 or older (render node: gpu_id only)"};
    return {"kfd", "render node beside a KFD image (criu-amdgpu kfd backend or CRIU's plugin)"};
}

std::string gemDomainNames(uint32_t domains) {
    static const std::pair<uint32_t, const char*> kNames[] = {
        {AMDGPU_GEM_DOMAIN_CPU, "CPU"},   {AMDGPU_GEM_DOMAIN_GTT, "GTT"},
        {AMDGPU_GEM_DOMAIN_VRAM, "VRAM"}, {AMDGPU_GEM_DOMAIN_GDS, "GDS"},
        {AMDGPU_GEM_DOMAIN_GWS, "GWS"},   {AMDGPU_GEM_DOMAIN_OA, "OA"}};
    std::string out;
    // Appended piece by piece: a literal + std::string trips GCC 12's false -Wrestrict at -O3.
    auto add = [&out](const std::string& piece) {
        if (!out.empty())
            out += '|';
        out += piece;
    };
    for (const auto& [bit, name] : kNames)
        if (domains & bit)
            add(name);
    uint32_t known = AMDGPU_GEM_DOMAIN_CPU | AMDGPU_GEM_DOMAIN_GTT | AMDGPU_GEM_DOMAIN_VRAM |
                     AMDGPU_GEM_DOMAIN_GDS | AMDGPU_GEM_DOMAIN_GWS | AMDGPU_GEM_DOMAIN_OA;
    if (domains & ~known)
        add(base::strFormat("0x%x", domains & ~known));
    return out.empty() ? "-" : out;
}

std::optional<MockObjects> mockObjectsOf(const formats::RenderNodeImage& image) {
    auto mock = mock::decodeRenderNodeState(image.privData);
    if (!mock)
        return std::nullopt;
    return MockObjects{mock->state.queues.size(), mock->state.events.size(), mock->state.ownerPid};
}

formats::SealOptions keyOptionsOf(const settings::Settings& settings, const std::string& key) {
    return {formats::Cipher::None, "", key.empty() ? settings.contentPrivateKey : key,
            settings.contentAllowPlaintext, settings.contentLegacyKeyWrap};
}

base::Result<Checkpoint> readCheckpoint(const std::string& dir, const formats::SealOptions& keys) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        return base::makeError(base::ErrorCode::NotFound,
                               "%s is not a directory: give the checkpoint's image directory "
                               "(criu dump -D DIR)",
                               dir.c_str());
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
        if (entry.path().filename().string().rfind("amdgpu-", 0) == 0)
            names.insert(entry.path().filename().string());
    if (ec)
        return base::makeError(base::ErrorCode::Io, "cannot list %s: %s", dir.c_str(),
                               ec.message().c_str());
    Checkpoint c;
    c.dir = dir;
    HAL_TRY_ASSIGN(c.store, formats::openDirectoryStore(dir));
    formats::ImageStore& store = *c.store;
    store.contentKeys().configure(keys);
    if (auto seal = formats::readSealImage(store, formats::kSealImageName); seal.ok())
        c.seal = *seal;
    else
        c.sealError = seal.error().describe();

    std::set<std::string> images;
    uint64_t metadataLeft = kMaxCheckpointMetadata;
    for (const std::string& name : names) {
        // Beyond the budget an image is recorded as undecodable, saying why.
        std::string refused =
            withinBudget(dir, name, metadataLeft)
                ? std::string()
                : base::strFormat("not decoded: the checkpoint's metadata images exceed the %llu "
                                  "MiB the tool decodes (a crafted checkpoint?)",
                                  static_cast<unsigned long long>(kMaxCheckpointMetadata >> 20));
        if (auto id = idIn(name, formats::kfdImageName)) {
            c.kfd.push_back(decode<kfd::KfdImage>(name, *id, refused,
                                                  [&] { return kfd::readKfdImage(store, name); }));
        } else if (auto rid = idIn(name, formats::renderNodeImageName)) {
            c.render.push_back(decode<formats::RenderNodeImage>(
                name, *rid, refused, [&] { return formats::readRenderNodeImage(store, *rid); }));
        } else if (auto did = idIn(name, formats::dmabufImageName)) {
            c.dmabuf.push_back(decode<formats::DmabufImage>(
                name, *did, refused, [&] { return formats::readDmabufImage(store, *did); }));
        } else if (name == formats::kTopologyImageName) {
            c.topology = decode<topology::Topology>(
                name, 0, refused, [&] { return formats::readTopologyImage(store); });
        } else {
            continue;
        }
        images.insert(name);
    }
    auto byId = [](const auto& a, const auto& b) { return a.id < b.id; };
    std::sort(c.kfd.begin(), c.kfd.end(), byId);
    std::sort(c.render.begin(), c.render.end(), byId);
    std::sort(c.dmabuf.begin(), c.dmabuf.end(), byId);
    formats::ChainBudget chainBudget; // every chain of the checkpoint together
    // The chain of file `id` (null: none, or broken: then recorded); its record is an image.
    auto chainOf = [&](uint32_t id) -> std::shared_ptr<const datapath::RestoreChain> {
        if (names.count(formats::chunkMapImageName(id)))
            images.insert(formats::chunkMapImageName(id));
        auto chain = datapath::RestoreChain::load(store, id, &chainBudget);
        if (!chain.ok()) {
            c.brokenChains.push_back(chain.error().message());
            return nullptr;
        }
        if (chain.value())
            c.chains[id] = chain.value();
        return chain.value();
    };
    for (const auto& d : c.kfd)
        if (d.value) {
            addKfdContents(d, chainOf(d.id), c.contents);
            addWriter(c.writers, writerOf(*d.value));
        }
    for (const auto& d : c.render)
        if (d.value) {
            addRenderContents(d, chainOf(d.id), c.contents);
            addWriter(c.writers, writerOf(*d.value));
        }
    // Compressed contents (content-compression) live under their packed name.
    for (ContentsFile& f : c.contents)
        if (!f.chain && !names.count(f.name) && names.count(formats::packedImageName(f.name)))
            f.name = formats::packedImageName(f.name);
    std::set<std::string> called;
    for (const ContentsFile& f : c.contents) {
        called.insert(f.name);
        if (!names.count(f.name))
            c.missing.push_back(f.name + " (called for by " + f.owner + ")");
    }
    // A follower of shared memory needs the image that owns the memory.
    for (const auto& d : c.render)
        if (d.value)
            for (size_t i = 0; i < d.value->bos.size(); ++i) {
                const auto& sharing = d.value->bos[i].sharing;
                if (!sharing || !sharing->follower || !sharing->ownerFile)
                    continue;
                std::string owner = formats::renderNodeImageName(sharing->ownerFile);
                if (!names.count(owner))
                    c.missing.push_back(base::strFormat(
                        "%s (BO %zu of %s shares memory 0x%llx with it)", owner.c_str(), i,
                        d.name.c_str(), static_cast<unsigned long long>(sharing->key)));
            }
    called.insert(formats::kSealImageName);
    called.insert(formats::kManifestImageName);
    for (const std::string& name : images) // an encrypted checkpoint's tags (formats/image_tag.h)
        if (names.count(formats::imageTagName(name)))
            called.insert(formats::imageTagName(name));
    for (const std::string& name : names)
        if (!images.count(name) && !called.count(name))
            c.leftover.push_back(name);
    return c;
}

} // namespace tools::image
