// criu-amdgpu image show: every amdgpu image of a checkpoint directory, decoded.
#include "image_catalog.h"

#include "formats/packed_image.h"
#include "image_commands.h"
#include "json_output.h"
#include "printable.h"

#include "command.h"

#include "kfd/kfd_uapi.h"
#include "topology/gpu_id.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>

namespace tools::image {
namespace {

using tools::Json;

/// The properties a restore compares, in the order `show` prints them (all are in the JSON).
const char* const kShownProperties[] = {"device_id",       "simd_count", "num_gws",    "fw_version",
                                        "sdma_fw_version", "capability", "vram_public"};

/// A GPU of a recorded topology: gpu_id, node (integers), vram_bytes, render_minor, hive_id,
/// properties (object: every recorded property, an integer each), io_links (array of {type,
/// node_to}).
Json gpuJson(const topology::Node& n) {
    Json j;
    j["gpu_id"] = n.gpuId;
    j["node"] = n.index;
    j["vram_bytes"] = n.vramSize();
    j["render_minor"] = n.renderMinor();
    j["hive_id"] = n.hiveId();
    j["properties"] = Json::object();
    for (const auto& [k, v] : n.properties)
        j["properties"][k] = v;
    j["io_links"] = Json::array();
    for (const topology::Link& l : n.ioLinks)
        j["io_links"].push_back({{"type", l.type}, {"node_to", l.nodeTo}});
    return j;
}

/// A recorded topology: gpus (array of gpuJson), cpu_nodes (integer).
Json topologyJson(const topology::Topology& t) {
    Json j;
    j["gpus"] = Json::array();
    for (const topology::Node* n : t.gpus())
        j["gpus"].push_back(gpuJson(*n));
    j["cpu_nodes"] = t.cpus().size();
    return j;
}

Json writerJson(const Writer& w) {
    return {{"backend", w.backend}, {"generation", w.generation}};
}

/// The dma-buf images that export BO `handle` of render-node file `renderId`. Images of CRIU's
/// plugin do not name the render node: they match on the GEM handle alone.
std::vector<std::string> exportsOf(const Checkpoint& c, uint32_t renderId, uint32_t handle) {
    std::vector<std::string> out;
    for (const auto& d : c.dmabuf)
        if (d.value && d.value->gemHandle == handle &&
            (!d.value->renderFileId || *d.value->renderFileId == renderId))
            out.push_back(d.name);
    return out;
}

/// A process (KFD image): image, id, pid, writer, gpus, cpu_nodes, bos (array of {index, gpu_id,
/// size, domain, alloc_flags, va, mmap_offset}), kernel_objects (queues, events and SVM ranges
/// together: the kernel's private data holds them), shared_mem_size, pages_checksums (bool).
Json processJson(const Decoded<kfd::KfdImage>& d) {
    const kfd::KfdImage& k = *d.value;
    Json j;
    j["image"] = d.name;
    j["id"] = d.id;
    j["pid"] = k.pid;
    j["writer"] = writerJson(writerOf(k));
    Json topo = topologyJson(k.topology);
    j["gpus"] = std::move(topo["gpus"]);
    j["cpu_nodes"] = std::move(topo["cpu_nodes"]);
    j["bos"] = Json::array();
    for (size_t i = 0; i < k.bos.size(); ++i) {
        const kfd::BoRecord& b = k.bos[i];
        j["bos"].push_back({{"index", i},
                            {"gpu_id", b.gpuId},
                            {"size", b.size},
                            {"domain", kfd::boKindName(b.allocFlags)},
                            {"alloc_flags", b.allocFlags},
                            {"va", b.addr},
                            {"mmap_offset", b.offset}});
    }
    j["kernel_objects"] = k.numObjects;
    j["shared_mem_size"] = k.sharedMemSize;
    j["pages_checksums"] = !k.checksums.empty();
    return j;
}

/// A render-node file: image, id, gpu_id, render_minor, writer, bos (array of {index, handle,
/// size, domains, alloc_flags, va, mappings (array of {addr, size, offset, flags}), imported
/// (bool), sharing (null, or {key, follower}: which BOs are the same memory, as this project's
/// backends record it), exported_as (array of dma-buf image names)}), contexts (array of {id,
/// query2_flags}), syncobjs (array of {handle, signaled, timeline_point (null for a binary
/// one)}), and for the mock GPU queues and events.
Json renderJson(const Checkpoint& c, const Decoded<formats::RenderNodeImage>& d) {
    const formats::RenderNodeImage& r = *d.value;
    Json j;
    j["image"] = d.name;
    j["id"] = r.id;
    j["gpu_id"] = r.gpuId;
    j["render_minor"] = r.renderMinor;
    j["writer"] = writerJson(writerOf(r));
    j["bos"] = Json::array();
    for (size_t i = 0; i < r.bos.size(); ++i) {
        const formats::DrmBoEntry& b = r.bos[i];
        Json maps = Json::array();
        for (const formats::DrmVmEntry& v : b.vms)
            maps.push_back(
                {{"addr", v.addr}, {"size", v.size}, {"offset", v.offset}, {"flags", v.flags}});
        j["bos"].push_back({{"index", i},
                            {"handle", b.handle},
                            {"size", b.size},
                            {"domains", gemDomainNames(b.preferredDomains)},
                            {"alloc_flags", b.allocFlags},
                            {"va", b.vms.empty() ? b.addr : b.vms.front().addr},
                            {"mappings", std::move(maps)},
                            {"imported", b.isImport},
                            {"sharing", b.sharing ? Json{{"key", b.sharing->key},
                                                         {"follower", b.sharing->follower}}
                                                  : Json(nullptr)},
                            {"exported_as", exportsOf(c, r.id, b.handle)}});
    }
    j["contexts"] = Json::array();
    for (const formats::DrmCtxEntry& ctx : r.contexts)
        j["contexts"].push_back({{"id", ctx.id}, {"query2_flags", ctx.query2Flags}});
    j["syncobjs"] = Json::array();
    for (const formats::DrmSyncobjEntry& s : r.syncobjs)
        j["syncobjs"].push_back(
            {{"handle", s.handle},
             {"signaled", s.signaled},
             {"timeline_point", s.timelinePoint ? Json(*s.timelinePoint) : Json(nullptr)}});
    if (auto mock = mockObjectsOf(r)) {
        j["queues"] = mock->queues;
        j["events"] = mock->events;
    }
    return j;
}

template <class T> void addUndecodable(Json& out, const std::vector<Decoded<T>>& list) {
    for (const auto& d : list)
        if (!d.value)
            out.push_back({{"image", d.name}, {"error", d.error}});
}

/// One incremental image's chain: {id, levels: array of {record, bytes_here}, newest first}.
Json chainJson(uint32_t id, const datapath::RestoreChain& chain) {
    Json levels = Json::array();
    std::vector<uint64_t> bytes = formats::bytesPerLevel(chain.levels());
    for (size_t i = 0; i < chain.levels().size(); ++i)
        levels.push_back({{"record", chain.levels()[i].record}, {"bytes_here", bytes[i]}});
    return {{"id", id}, {"levels", levels}};
}

/// "AB:CD:...", as `openssl x509 -fingerprint -sha256` prints a fingerprint.
std::string colonHex(std::span<const std::byte> bytes) {
    std::string hex = formats::hexOf(bytes), out;
    out.reserve(hex.size() + hex.size() / 2);
    for (size_t i = 0; i < hex.size(); ++i) {
        if (i != 0 && i % 2 == 0)
            out.push_back(':');
        out.push_back(static_cast<char>(toupper(static_cast<unsigned char>(hex[i]))));
    }
    return out;
}

/// The encryption of the contents (formats/seal_image.h): cipher and who can open them, never a
/// key.
Json encryptionJson(const Checkpoint& c) {
    if (!c.seal)
        return nullptr;
    return Json{{"cipher", formats::cipherName(c.seal->cipher)},
                {"certificate_sha256", colonHex(c.seal->certificate)},
                {"public_key_id_sha256", formats::hexOf(c.seal->keyId)}};
}

void printEncryption(const Checkpoint& c) {
    if (!c.sealError.empty())
        printf("cannot decode %s: %s\n", formats::kSealImageName, printable(c.sealError).c_str());
    if (!c.seal)
        return;
    printf("encrypted: %s; the key is wrapped for the certificate with SHA-256 fingerprint %s "
           "(public key id %s); restoring needs its private key (content-private-key)\n",
           formats::cipherName(c.seal->cipher), colonHex(c.seal->certificate).c_str(),
           formats::hexOf(c.seal->keyId).c_str());
}

/// The --json object, keys in this order: dir (string), encryption (encryptionJson), writers
/// (array of {backend, generation}), processes (processJson), render_nodes (renderJson), dmabufs
/// (array of {image, id, gem_handle, render_file_id (integer or null)}), topology (topologyJson
/// of amdgpu-topology.img, or null), contents_files (array of {name, owner, bytes, checksum
/// (integer or null), checksum_kind ("XXH3-64", "FNV-1a 64" or null)}), chains (chainJson of
/// each incremental image), broken_chains, missing, leftover (arrays of strings), undecodable
/// (array of {image, error}).
Json showJson(const Checkpoint& c) {
    Json j;
    j["dir"] = c.dir;
    j["encryption"] = encryptionJson(c);
    j["writers"] = Json::array();
    for (const Writer& w : c.writers)
        j["writers"].push_back(writerJson(w));
    j["processes"] = Json::array();
    for (const auto& d : c.kfd)
        if (d.value)
            j["processes"].push_back(processJson(d));
    j["render_nodes"] = Json::array();
    for (const auto& d : c.render)
        if (d.value)
            j["render_nodes"].push_back(renderJson(c, d));
    j["dmabufs"] = Json::array();
    for (const auto& d : c.dmabuf)
        if (d.value)
            j["dmabufs"].push_back(
                {{"image", d.name},
                 {"id", d.id},
                 {"gem_handle", d.value->gemHandle},
                 {"render_file_id",
                  d.value->renderFileId ? Json(*d.value->renderFileId) : Json(nullptr)}});
    j["topology"] = c.topology && c.topology->value ? topologyJson(*c.topology->value) : Json();
    j["contents_files"] = Json::array();
    for (const ContentsFile& f : c.contents)
        j["contents_files"].push_back(
            {{"name", f.name},
             {"owner", f.owner},
             {"bytes", f.bytes},
             {"checksum", f.checksum ? Json(f.checksum->value) : Json(nullptr)},
             {"checksum_kind",
              f.checksum ? Json(content::digestName(f.checksum->kind)) : Json(nullptr)}});
    j["chains"] = Json::array();
    for (const auto& [id, chain] : c.chains)
        j["chains"].push_back(chainJson(id, *chain));
    j["broken_chains"] = c.brokenChains;
    j["missing"] = c.missing;
    j["leftover"] = c.leftover;
    j["undecodable"] = Json::array();
    addUndecodable(j["undecodable"], c.kfd);
    addUndecodable(j["undecodable"], c.render);
    addUndecodable(j["undecodable"], c.dmabuf);
    if (c.topology && !c.topology->value)
        j["undecodable"].push_back({{"image", c.topology->name}, {"error", c.topology->error}});
    return j;
}

std::string mib(uint64_t bytes) {
    if (bytes < (1u << 20))
        return base::strFormat("%llu bytes", static_cast<unsigned long long>(bytes));
    return base::strFormat("%.1f MiB", bytes / 1048576.0);
}

void printGpus(const topology::Topology& t, const char* indent) {
    for (const topology::Node* n : t.gpus()) {
        printf("%sGPU %s node %u, VRAM %s, renderD%d", indent, topology::gpuIdHex(n->gpuId).c_str(),
               n->index, mib(n->vramSize()).c_str(), n->renderMinor());
        if (n->hiveId())
            printf(", XGMI hive 0x%llx", static_cast<unsigned long long>(n->hiveId()));
        printf("\n%s  ", indent);
        for (const char* key : kShownProperties)
            if (n->has(key))
                printf(" %s 0x%llx", key, static_cast<unsigned long long>(n->prop(key)));
        printf(", %zu io_link(s)\n", n->ioLinks.size());
    }
}

void printProcess(const Decoded<kfd::KfdImage>& d) {
    const kfd::KfdImage& k = *d.value;
    uint64_t bytes = std::accumulate(k.bos.begin(), k.bos.end(), uint64_t{0},
                                     [](uint64_t s, const kfd::BoRecord& b) { return s + b.size; });
    printf("process %u (%s): %zu GPU(s), %zu CPU node(s), %zu BO(s) of %s, %u kernel object(s) "
           "(queues, events and SVM ranges, in the kernel's private data), shared memory %llu "
           "bytes\n",
           k.pid, printable(d.name).c_str(), k.topology.gpus().size(), k.topology.cpus().size(),
           k.bos.size(), mib(bytes).c_str(), k.numObjects,
           static_cast<unsigned long long>(k.sharedMemSize));
    printf("  written by %s\n", writerOf(k).generation.c_str());
    printGpus(k.topology, "  ");
    for (size_t i = 0; i < k.bos.size(); ++i) {
        const kfd::BoRecord& b = k.bos[i];
        printf("  BO %zu: GPU %s %-10s %llu bytes at VA 0x%llx, alloc_flags 0x%08x\n", i,
               topology::gpuIdHex(b.gpuId).c_str(), kfd::boKindName(b.allocFlags),
               static_cast<unsigned long long>(b.size), static_cast<unsigned long long>(b.addr),
               b.allocFlags);
    }
}

void printRender(const Checkpoint& c, const Decoded<formats::RenderNodeImage>& d) {
    const formats::RenderNodeImage& r = *d.value;
    printf("render node %s: GPU %s %s, %zu BO(s)", printable(d.name).c_str(),
           topology::gpuIdHex(r.gpuId).c_str(),
           r.legacyGpuIdOnly ? "(render minor not recorded)"
                             : base::strFormat("renderD%u", r.renderMinor).c_str(),
           r.bos.size());
    if (auto mock = mockObjectsOf(r))
        printf(", %zu queue(s), %zu event(s)", mock->queues, mock->events);
    printf("\n  written by %s\n", writerOf(r).generation.c_str());
    for (size_t i = 0; i < r.bos.size(); ++i) {
        const formats::DrmBoEntry& b = r.bos[i];
        printf("  BO %zu: handle %u %-8s %llu bytes", i, b.handle,
               gemDomainNames(b.preferredDomains).c_str(), static_cast<unsigned long long>(b.size));
        if (!b.vms.empty())
            printf(" at VA 0x%llx (%zu mapping(s))",
                   static_cast<unsigned long long>(b.vms.front().addr), b.vms.size());
        printf(", flags 0x%llx", static_cast<unsigned long long>(b.allocFlags));
        if (b.isImport)
            printf(", imported");
        if (b.sharing && b.sharing->key)
            printf(", %s of shared memory 0x%llx", b.sharing->follower ? "follower" : "owner",
                   static_cast<unsigned long long>(b.sharing->key));
        for (const std::string& e : exportsOf(c, r.id, b.handle))
            printf(", exported as %s", printable(e).c_str());
        printf("\n");
    }
    for (const formats::DrmCtxEntry& ctx : r.contexts)
        printf("  context %u\n", ctx.id);
    for (const formats::DrmSyncobjEntry& s : r.syncobjs) {
        if (s.timelinePoint)
            printf("  syncobj %u: timeline at point %llu\n", s.handle,
                   static_cast<unsigned long long>(*s.timelinePoint));
        else
            printf("  syncobj %u: %s\n", s.handle, s.signaled ? "signaled" : "no fence");
    }
}

/// Memory shared between BOs of the render-node images: which BO exports it (the one not
/// imported), which import it, and which holds its contents.
void printSharing(const Checkpoint& c) {
    struct Holder {
        std::string what;
        bool imported = false;
        bool follower = false;
    };
    std::map<uint64_t, std::vector<Holder>> shared;
    for (const auto& d : c.render) {
        if (!d.value)
            continue;
        auto mock = mockObjectsOf(*d.value);
        std::string process = mock && mock->ownerPid
                                  ? base::strFormat(" (process %d)", mock->ownerPid)
                                  : std::string();
        for (size_t i = 0; i < d.value->bos.size(); ++i) {
            const formats::DrmBoEntry& b = d.value->bos[i];
            if (b.sharing && b.sharing->key)
                shared[b.sharing->key].push_back(
                    {base::strFormat("%s BO %zu%s", d.name.c_str(), i, process.c_str()), b.isImport,
                     b.sharing->follower});
        }
    }
    for (const auto& [key, holders] : shared) {
        std::string exporters, importers, contents;
        for (const Holder& h : holders) {
            std::string& list = h.imported ? importers : exporters;
            list += (list.empty() ? "" : ", ") + h.what;
            if (!h.follower)
                contents = h.what;
        }
        printf("shared memory 0x%llx: exported by %s; imported by %s; contents with %s\n",
               static_cast<unsigned long long>(key),
               exporters.empty() ? "a process outside the checkpoint"
                                 : printable(exporters).c_str(),
               importers.empty() ? "none" : printable(importers).c_str(),
               contents.empty() ? "no BO (the checkpoint is incomplete)"
                                : printable(contents).c_str());
    }
}

template <class T> void printUndecodable(const std::vector<Decoded<T>>& list) {
    for (const auto& d : list)
        if (!d.value)
            printf("cannot decode %s: %s\n", printable(d.name).c_str(), printable(d.error).c_str());
}

void showText(const Checkpoint& c) {
    printf("checkpoint %s: %zu amdgpu image(s), %zu contents file(s)\n", printable(c.dir).c_str(),
           c.imageCount(), c.contents.size());
    for (const Writer& w : c.writers)
        printf("written by: %s (restored by the %s backend)\n", w.generation.c_str(),
               w.backend.c_str());
    for (const auto& d : c.kfd)
        if (d.value)
            printProcess(d);
    for (const auto& d : c.render)
        if (d.value)
            printRender(c, d);
    printSharing(c);
    for (const auto& d : c.dmabuf)
        if (d.value)
            printf("dma-buf %s: GEM handle %u%s\n", printable(d.name).c_str(), d.value->gemHandle,
                   d.value->renderFileId
                       ? base::strFormat(" of render-node file %u", *d.value->renderFileId).c_str()
                       : "");
    if (c.topology && c.topology->value) {
        printf("topology %s: %zu GPU(s), %zu CPU node(s)\n", printable(c.topology->name).c_str(),
               c.topology->value->gpus().size(), c.topology->value->cpus().size());
        printGpus(*c.topology->value, "  ");
    }
    printUndecodable(c.kfd);
    printUndecodable(c.render);
    printUndecodable(c.dmabuf);
    if (c.topology && !c.topology->value)
        printf("cannot decode %s: %s\n", printable(c.topology->name).c_str(),
               printable(c.topology->error).c_str());
    for (const auto& [id, chain] : c.chains) {
        std::vector<uint64_t> bytes = formats::bytesPerLevel(chain->levels());
        printf("incremental %s: a chain of %zu checkpoints; only criu-amdgpu restores it (CRIU's "
               "own plugin does not read amdgpu-delta-* files)\n",
               printable(chain->levels().front().record).c_str(), chain->levels().size());
        for (size_t i = 0; i < bytes.size(); ++i)
            printf("  %s %s: holds %s of the contents\n", i == 0 ? "this" : "parent",
                   printable(chain->levels()[i].record).c_str(), mib(bytes[i]).c_str());
    }
    size_t packed = static_cast<size_t>(
        std::count_if(c.contents.begin(), c.contents.end(),
                      [](const ContentsFile& f) { return formats::isPackedImageName(f.name); }));
    if (packed)
        printf("compressed: %zu contents file(s) (amdgpu-packed-*); only criu-amdgpu restores "
               "them (CRIU's own plugin does not read them)\n",
               packed);
    printEncryption(c);
    for (const std::string& b : c.brokenChains)
        printf("broken chain: %s\n", printable(b).c_str());
    for (const std::string& m : c.missing)
        printf("missing: %s\n", printable(m).c_str());
    for (const std::string& l : c.leftover)
        printf("left over: %s (no image calls for it)\n", printable(l).c_str());
}

} // namespace

int runShow(const std::string& dir, bool json) {
    auto checkpoint = readCheckpoint(dir);
    if (!checkpoint) {
        fprintf(stderr, "criu-amdgpu image show: %s\n",
                printable(checkpoint.error().describe()).c_str());
        return kExitBadInput;
    }
    if (json)
        printJson(showJson(*checkpoint));
    else
        showText(*checkpoint);
    if (checkpoint->imageCount() == 0) {
        fprintf(stderr,
                "criu-amdgpu image show: no amdgpu image in %s: the checkpointed processes used "
                "no AMD GPU, or this is not a criu image directory\n",
                dir.c_str());
        return kExitBadInput;
    }
    bool problems = checkpoint->hasUndecodable() || !checkpoint->sealError.empty() ||
                    !checkpoint->missing.empty() || !checkpoint->brokenChains.empty();
    return problems ? kExitProblem : 0;
}

} // namespace tools::image
