// criu-amdgpu image check: a restore dry-run. It chooses the backend as the plugin does at
// restore (hal::BackendRegistry::select, preferring render-node-bos for checkpoints with
// amdgpu-topology.img), reads the options from the same places (config::loadSettings), and maps
// the checkpointed GPUs with the code restoreFile() runs (hal::Device::matchForRestore), or, with
// --topology, with the same matcher and options against another machine's KFD sysfs tree.
#include "image_catalog.h"
#include "image_commands.h"
#include "json_output.h"
#include "printable.h"

#include "command.h"

#include "config/config.h"
#include "formats/topology_codec.h"
#include "hal/registry.h"
#include "tool_paths.h"
#include "topology/match.h"
#include "topology/sysfs.h"

#include <cstdio>
#include <filesystem>
#include <set>
#include <vector>

namespace tools::image {
namespace {

using tools::Json;

/// The mapping of one checkpointed topology (a process's KFD image, or amdgpu-topology.img).
struct SourceMatch {
    std::string image;
    topology::Topology source;
    topology::MatchReport report;
};

/// Everything the dry run found.
struct Verdict {
    std::string backend; ///< the backend that would restore ("" when none would)
    std::optional<topology::Topology> local; ///< the topology matched against
    std::vector<SourceMatch> sources;
    std::vector<std::string> reasons; ///< why it would not restore, beyond the GPU mappings
    bool wouldRestore() const {
        if (!reasons.empty())
            return false;
        for (const SourceMatch& s : sources)
            if (!s.report.matched)
                return false;
        return true;
    }
};

/// The checkpointed topologies the restore would map: each process's, and amdgpu-topology.img.
std::vector<SourceMatch> sourcesOf(const Checkpoint& c) {
    std::vector<SourceMatch> out;
    for (const auto& d : c.kfd)
        if (d.value)
            out.push_back({d.name, d.value->topology, {}});
    if (c.topology && c.topology->value)
        out.push_back({c.topology->name, *c.topology->value, {}});
    return out;
}

/// The backend the checkpoint's images need (what wrote them), "" when they do not say.
std::string neededBackend(const Checkpoint& c) {
    for (const Writer& w : c.writers)
        if (w.backend != "kfd" || c.writers.size() == 1)
            return w.backend; // a render-node writer decides; kfd render images go with kfd
    return c.writers.empty() ? "" : c.writers.front().backend;
}

/// Chooses the backend as the plugin does at restore and maps every source with its Device.
base::Result<void> checkOnThisMachine(const settings::Settings& settings, const std::string& dir,
                                      const Checkpoint& c, Verdict& v) {
    hal::BackendRegistry registry;
    registry.discover(dir, settings, hal::HostServices{});
    std::string routing = c.topology ? hal::capability::kRenderNodeBos : "";
    auto chosen = registry.select(settings, routing);
    if (!chosen) {
        v.reasons.push_back(
            "no backend would restore it on this machine: " + chosen.error().describe() +
            " (criu-amdgpu probe lists the backends; option `backends` chooses)");
        return base::success();
    }
    v.backend = (*chosen)->name;
    std::string needed = neededBackend(c);
    if (!needed.empty() && needed != v.backend)
        v.reasons.push_back(base::strFormat(
            "the checkpoint was written by the %s backend and only it restores its images; this "
            "machine would restore with the %s backend (set option `backends` to %s, or restore "
            "where it is present)",
            needed.c_str(), v.backend.c_str(), needed.c_str()));
    HAL_TRY_ASSIGN(auto device, (*chosen)->backend->createDevice(
                                    hal::DeviceEnv{&settings, c.store.get(), nullptr,
                                                   /*probeAbsentNodes=*/false}));
    for (SourceMatch& s : v.sources) {
        HAL_TRY_ASSIGN(hal::Device::RestoreMatch m, device->matchForRestore(s.source));
        s.report = std::move(m.report);
        v.local = std::move(m.local);
    }
    return base::success();
}

/// The values a restore compares for one mapped GPU, source -> destination.
std::string comparedValues(const topology::Node& s, const topology::Node& d) {
    static const char* const kKeys[] = {"device_id",    "simd_count", "num_gws",
                                        "caches_count", "fw_version", "sdma_fw_version",
                                        "capability"};
    std::string out = base::strFormat("VRAM %llu -> %llu MiB",
                                      static_cast<unsigned long long>(s.vramSize() >> 20),
                                      static_cast<unsigned long long>(d.vramSize() >> 20));
    for (const char* k : kKeys)
        if (s.has(k) || d.has(k))
            out += base::strFormat(", %s 0x%llx -> 0x%llx", k,
                                   static_cast<unsigned long long>(s.prop(k)),
                                   static_cast<unsigned long long>(d.prop(k)));
    return out;
}

const topology::Node* gpuOf(const topology::Topology& t, uint32_t gpuId) {
    for (const topology::Node* n : t.gpus())
        if (n->gpuId == gpuId)
            return n;
    return nullptr;
}

/// The --json object, keys in this order: dir (string), would_restore (bool), backend (string:
/// the backend that would restore; with --topology the one the images need), destination
/// (string: the topology matched against), sources (array of {image, matched (bool), mapping
/// (array of {src_gpu_id, dst_gpu_id}), reasons, warnings (arrays of strings)}), reasons (array
/// of strings: why it would not restore besides the GPU mappings).
Json checkJson(const std::string& dir, const Verdict& v) {
    Json j;
    j["dir"] = dir;
    j["would_restore"] = v.wouldRestore();
    j["backend"] = v.backend;
    j["destination"] = v.local ? v.local->source : "";
    j["sources"] = Json::array();
    for (const SourceMatch& s : v.sources) {
        Json m = Json::array();
        for (const auto& [src, dst] : s.report.mapping)
            m.push_back({{"src_gpu_id", src}, {"dst_gpu_id", dst}});
        j["sources"].push_back({{"image", s.image},
                                {"matched", s.report.matched},
                                {"mapping", std::move(m)},
                                {"reasons", s.report.reasons},
                                {"warnings", s.report.warnings}});
    }
    j["reasons"] = v.reasons;
    return j;
}

void checkText(const Verdict& v) {
    printf("backend: %s\n", v.backend.empty() ? "none" : printable(v.backend).c_str());
    if (v.local)
        printf("destination: %s\n", printable(v.local->source).c_str());
    for (const SourceMatch& s : v.sources) {
        printf("%s: %zu GPU(s)", printable(s.image).c_str(), s.source.gpus().size());
        if (s.report.matched) {
            printf(", mapped:\n");
            for (const auto& [src, dst] : s.report.mapping) {
                printf("  %s -> %s", topology::gpuIdHex(src).c_str(),
                       topology::gpuIdHex(dst).c_str());
                const topology::Node* sn = gpuOf(s.source, src);
                const topology::Node* dn = v.local ? gpuOf(*v.local, dst) : nullptr;
                if (sn && dn)
                    printf(": %s", comparedValues(*sn, *dn).c_str());
                printf("\n");
            }
        } else {
            printf(", no mapping:\n");
            for (const std::string& r : s.report.reasons)
                printf("  %s\n", printable(r).c_str());
        }
        for (const std::string& w : s.report.warnings)
            printf("  warning: %s\n", printable(w).c_str());
    }
    for (const std::string& r : v.reasons)
        printf("would not restore: %s\n", printable(r).c_str());
    printf("%s\n", v.wouldRestore() ? "would restore" : "would NOT restore");
}

int fail(const std::string& message) {
    fprintf(stderr, "criu-amdgpu image check: %s\n", printable(message).c_str());
    return kExitBadInput;
}

} // namespace

/// "" when the key of `keys` opens the encrypted checkpoint `c` (or it is not encrypted), else
/// why not.
std::string keyOpens(const Checkpoint& c, const formats::SealOptions& keys) {
    const std::string& key = keys.privateKey;
    if (!c.seal)
        return "";
    if (key.empty())
        return base::strFormat(
            "its GPU contents are encrypted (%s): give the private key that opens "
            "them (--key, option content-private-key)",
            formats::cipherName(c.seal->cipher));
    auto loaded = formats::PrivateKey::load(key, "content-private-key");
    if (!loaded)
        return loaded.error().describe();
    auto master = loaded->unwrap(*c.seal, formats::kSealImageName, keys.legacyKeyWrap);
    return master ? "" : master.error().describe();
}

/// Why the contents of `c` and of its chains' parents would not be opened with the keys its store
/// is configured with, beyond
/// what keyOpens says of its own key image: a key image missing where a private key is set (no
/// downgrade, formats/content_keys.h), a parent's that the key does not open.
std::vector<std::string> keyReasons(const Checkpoint& c) {
    std::set<std::string> dirs;
    if (!c.seal && c.sealError.empty())
        dirs.insert("");
    for (const auto& [id, chain] : c.chains)
        for (const formats::ChainLevel& level : chain->levels())
            if (!level.dir.empty())
                dirs.insert(level.dir);
    std::vector<std::string> reasons;
    for (const std::string& dir : dirs)
        if (auto opened = c.store->contentKeys().keysOf(*c.store, dir); !opened)
            reasons.push_back(opened.error().describe());
    return reasons;
}

int runCheck(const CheckArgs& args) {
    auto settings = config::loadSettings(config::Sources::fromProcessEnvironment());
    if (!settings)
        return fail(settings.error().describe());
    if (!args.backendDir.empty())
        settings->backendDir = args.backendDir;
    if (!args.dev.empty())
        settings->devRoot = args.dev;
    formats::SealOptions keys = keyOptionsOf(*settings, args.key);
    auto checkpoint = readCheckpoint(args.dir, keys);
    if (!checkpoint)
        return fail(checkpoint.error().describe());
    const Checkpoint& c = *checkpoint;
    std::string keyVerdict = keyOpens(c, keys);
    if (c.imageCount() == 0)
        return fail("no amdgpu image in " + args.dir);

    Verdict v;
    v.sources = sourcesOf(c);
    for (const auto& d : c.kfd)
        if (!d.value)
            v.reasons.push_back(d.name + " cannot be decoded: " + d.error);
    for (const auto& d : c.render)
        if (!d.value)
            v.reasons.push_back(d.name + " cannot be decoded: " + d.error);
    if (c.topology && !c.topology->value)
        v.reasons.push_back(c.topology->name + " cannot be decoded: " + c.topology->error);
    for (const std::string& m : c.missing)
        v.reasons.push_back("missing " + m);
    if (!c.sealError.empty())
        v.reasons.push_back(c.sealError);
    else if (c.seal && !keyVerdict.empty())
        v.reasons.push_back(keyVerdict);
    for (std::string& r : keyReasons(c))
        v.reasons.push_back(std::move(r));
    for (const std::string& b : c.brokenChains)
        v.reasons.push_back("the chain of an incremental image is broken: " + b);
    SignatureVerdict signature = checkSignature(args.dir, settings->trustedCertificates);
    if (!signature.refusal.empty())
        v.reasons.push_back("not a checkpoint the option trusted-certificates accepts: " +
                            signature.refusal);
    if (v.sources.empty() && v.reasons.empty())
        v.reasons.push_back("no image records the checkpointed GPUs (no amdgpu-kfd-*.img, no " +
                            std::string(formats::kTopologyImageName) + ")");

    if (!args.topology.empty()) {
        auto tree = topology::readKfdTopology(args.topology);
        if (!tree)
            return fail("--topology: " + tree.error().describe());
        v.local = std::move(tree).value();
        v.backend = neededBackend(c);
        topology::MatchOptions options = topology::matchOptionsFromSettings(*settings);
        if (!args.dev.empty())
            options.usableDstGpuIds = topology::gpusWithRenderNodes(*v.local, args.dev);
        for (SourceMatch& s : v.sources) {
            s.report = topology::matchTopologies(s.source, *v.local, options);
            topology::explainUnusableGpus(s.report, *v.local, options.usableDstGpuIds,
                                          "--dev " + args.dev);
        }
    } else {
        auto checked = checkOnThisMachine(
            *settings, hal::defaultBackendDir(*settings, tools::pluginDirOfTool()), c, v);
        if (!checked)
            return fail(checked.error().describe());
    }
    if (args.json) {
        auto j = checkJson(args.dir, v);
        j["encrypted"] = c.seal.has_value();
        if (c.seal)
            j["key_opens"] = keyVerdict.empty();
        printJson(j);
    } else {
        if (c.seal && keyVerdict.empty())
            printf("encrypted (%s): the private key %s opens it\n",
                   formats::cipherName(c.seal->cipher), keys.privateKey.c_str());
        checkText(v);
    }
    return v.wouldRestore() ? 0 : kExitProblem;
}

} // namespace tools::image
