// criu-amdgpu topology: show a KFD sysfs tree, match two trees as a restore would, or generate a
// synthetic tree.
#include "command.h"
#include "json_output.h"

#include "config/config.h"
#include "topology/match.h"
#include "topology/synth.h"
#include "topology/sysfs.h"

#include "cmdline/value_options.h"

#include <cstdio>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace tools {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitNoMapping = 2;

/// The arguments of every topology command (one runs).
struct Options {
    std::string root = topology::kKfdSysfsTopologyRoot, src, dst, out;
    bool json = false;
    topology::SyntheticSpec spec;
};

/// The settings `match` uses: the same loader as the plugin (defaults, YAML, options file,
/// environment).
base::Result<settings::Settings> loadToolSettings() {
    return config::loadSettings(config::Sources::fromProcessEnvironment());
}

const char* kind(const topology::Node& n) {
    if (n.isGpu() && n.isCpu())
        return "apu";
    if (n.isGpu())
        return "gpu";
    if (n.isCpu())
        return "cpu";
    return "other";
}

const char* linkName(uint32_t type) {
    switch (type) {
    case 1:
        return "HyperTransport";
    case 2:
        return "PCIe";
    case 5:
        return "QPI";
    case 11:
        return "XGMI";
    default:
        return "other";
    }
}

/// A link: type, node_from, node_to, weight (integers) and properties (every key of its
/// properties file, an integer each).
tools::Json linksJson(const std::vector<topology::Link>& links) {
    tools::Json out = tools::Json::array();
    for (const topology::Link& l : links) {
        tools::Json j;
        j["type"] = l.type;
        j["node_from"] = l.nodeFrom;
        j["node_to"] = l.nodeTo;
        j["weight"] = l.weight;
        j["properties"] = tools::Json::object();
        for (const auto& [k, v] : l.properties)
            j["properties"][k] = v;
        out.push_back(std::move(j));
    }
    return out;
}

/// The `show --json` object, keys in this order:
///   source               string: the tree read
///   gpu_count, cpu_count integers
///   hives                array of the XGMI hive ids (integers)
///   nodes                array, one object per node: index (integer), kind ("gpu", "cpu", "apu"
///                        or "other"), gpu_id (integer), gpu_id_derived (bool: no gpu_id file),
///                        name (string), vram_bytes, render_minor, hive_id (integers), properties
///                        (object: every key of the properties file, an integer each), mem_banks
///                        (array of {heap_type, size_in_bytes}), caches_read (integer), io_links
///                        and p2p_links (arrays of links, see linksJson)
///   skipped, notes       arrays of strings: what the reader left out, and why
tools::Json showJson(const topology::Topology& t) {
    tools::Json j;
    j["source"] = t.source;
    j["gpu_count"] = t.gpus().size();
    j["cpu_count"] = t.cpus().size();
    j["hives"] = t.hiveIds();
    j["nodes"] = tools::Json::array();
    for (const topology::Node& n : t.nodes) {
        tools::Json node;
        node["index"] = n.index;
        node["kind"] = kind(n);
        node["gpu_id"] = n.gpuId;
        node["gpu_id_derived"] = n.syntheticGpuId;
        node["name"] = n.name;
        node["vram_bytes"] = n.vramSize();
        node["render_minor"] = n.renderMinor();
        node["hive_id"] = n.hiveId();
        node["properties"] = tools::Json::object();
        for (const auto& [k, v] : n.properties)
            node["properties"][k] = v;
        node["mem_banks"] = tools::Json::array();
        for (const topology::MemBank& b : n.memBanks)
            node["mem_banks"].push_back(
                {{"heap_type", b.heapType}, {"size_in_bytes", b.sizeInBytes}});
        node["caches_read"] = n.caches.size();
        node["io_links"] = linksJson(n.ioLinks);
        node["p2p_links"] = linksJson(n.p2pLinks);
        j["nodes"].push_back(std::move(node));
    }
    j["skipped"] = t.skipped;
    j["notes"] = t.notes;
    return j;
}

/// The `match --json` object, keys in this order: matched (bool), mapping (array of
/// {src_gpu_id, dst_gpu_id}, integers), reasons (array of strings: why no mapping exists).
tools::Json matchJson(const topology::MatchReport& r) {
    tools::Json j;
    j["matched"] = r.matched;
    j["mapping"] = tools::Json::array();
    for (const auto& [s, d] : r.mapping)
        j["mapping"].push_back({{"src_gpu_id", s}, {"dst_gpu_id", d}});
    j["reasons"] = r.reasons;
    return j;
}

void showText(const topology::Topology& t) {
    printf("topology %s: %zu nodes, %zu CPU node(s), %zu GPU(s), %zu XGMI hive(s)\n",
           t.source.c_str(), t.nodes.size(), t.cpus().size(), t.gpus().size(), t.hiveIds().size());
    for (const topology::Node& n : t.nodes) {
        if (n.isGpu()) {
            printf("  node %-3u %-3s gpu_id %s%s device 0x%04llx renderD%d VRAM %llu MiB", n.index,
                   kind(n), topology::gpuIdHex(n.gpuId).c_str(),
                   n.syntheticGpuId ? " (derived)" : "", (unsigned long long)n.prop("device_id"),
                   n.renderMinor(), (unsigned long long)(n.vramSize() >> 20));
            if (n.hiveId())
                printf(" hive 0x%llx", (unsigned long long)n.hiveId());
            printf("\n");
        } else {
            printf("  node %-3u %-3s %llu cores\n", n.index, kind(n),
                   (unsigned long long)n.prop("cpu_cores_count"));
        }
        std::map<std::string, unsigned> counts;
        for (const topology::Link& l : n.ioLinks)
            counts[linkName(l.type)]++;
        if (!counts.empty()) {
            printf("           io_links:");
            for (const auto& [name, c] : counts)
                printf(" %u %s", c, name.c_str());
            printf("\n");
        }
    }
    for (const std::string& s : t.skipped)
        printf("skipped: %s\n", s.c_str());
    for (const std::string& s : t.notes)
        printf("note: %s\n", s.c_str());
}

int cmdShow(const Options& o) {
    auto topo = topology::readKfdTopology(o.root);
    if (!topo) {
        fprintf(stderr, "criu-amdgpu topology show: %s\n", topo.error().describe().c_str());
        return kExitBadInput;
    }
    if (o.json)
        printJson(showJson(*topo));
    else
        showText(*topo);
    return kExitOk;
}

int cmdMatch(const Options& o) {
    auto settings = loadToolSettings();
    if (!settings) {
        fprintf(stderr, "criu-amdgpu topology match: %s\n", settings.error().describe().c_str());
        return kExitBadInput;
    }
    auto src = topology::readKfdTopology(o.src);
    if (!src) {
        fprintf(stderr, "criu-amdgpu topology match: --src: %s\n", src.error().describe().c_str());
        return kExitBadInput;
    }
    auto dst = topology::readKfdTopology(o.dst);
    if (!dst) {
        fprintf(stderr, "criu-amdgpu topology match: --dst: %s\n", dst.error().describe().c_str());
        return kExitBadInput;
    }
    topology::MatchReport r =
        topology::matchTopologies(*src, *dst, topology::matchOptionsFromSettings(*settings));
    if (o.json) {
        printJson(matchJson(r));
        for (const std::string& w : r.warnings)
            fprintf(stderr, "warning: %s\n", w.c_str());
    } else {
        for (const std::string& w : r.warnings)
            printf("warning: %s\n", w.c_str());
        if (r.matched) {
            printf("mapping (%zu GPUs):\n", r.mapping.size());
            for (const auto& [s, d] : r.mapping)
                printf("  %s -> %s\n", topology::gpuIdHex(s).c_str(),
                       topology::gpuIdHex(d).c_str());
        } else {
            printf("no mapping:\n");
            for (const std::string& reason : r.reasons)
                printf("  %s\n", reason.c_str());
        }
    }
    return r.matched ? kExitOk : kExitNoMapping;
}

int cmdGenerate(const Options& o) {
    const topology::SyntheticSpec& spec = o.spec;
    if (spec.hives > spec.gpus) {
        fprintf(stderr, "criu-amdgpu topology generate: --hives %u exceeds --gpus %u\n", spec.hives,
                spec.gpus);
        return kExitBadInput;
    }
    if (uint64_t(spec.gpuIdBase) + uint64_t(spec.gpus) * spec.gpuIdStride > UINT32_MAX) {
        fprintf(stderr, "criu-amdgpu topology generate: gpu_ids would overflow 32 bits\n");
        return kExitBadInput;
    }
    struct stat st;
    if (::stat((o.out + "/nodes").c_str(), &st) == 0) {
        fprintf(stderr, "criu-amdgpu topology generate: %s/nodes already exists\n", o.out.c_str());
        return kExitBadInput;
    }
    auto written = topology::writeKfdTopology(topology::makeSyntheticTopology(spec), o.out);
    if (!written) {
        fprintf(stderr, "criu-amdgpu topology generate: %s\n", written.error().describe().c_str());
        return kExitBadInput;
    }
    printf("wrote %u GPU(s), %u hive(s), %u CPU node(s) to %s\n", spec.gpus, spec.hives,
           spec.cpuNodes, o.out.c_str());
    return kExitOk;
}

void addGenerateOptions(cmdline::Command command, topology::SyntheticSpec& spec) {
    using cmdline::addNumberOption;
    addNumberOption(command, "--gpus", &spec.gpus, 0, 1024, "N", "GPU nodes");
    addNumberOption(command, "--hives", &spec.hives, 0, 1024, "H",
                    "XGMI hives the GPUs are split into evenly; 0: PCIe only");
    addNumberOption(command, "--cpus", &spec.cpuNodes, 1, 64, "C",
                    "CPU (NUMA) nodes the GPUs are spread over round-robin");
    addNumberOption(command, "--gpu-id-base", &spec.gpuIdBase, 1, 0xffff0000u, "X",
                    "gpu_id of the first GPU; the next ones follow in steps of 0x111")
        .defaultText("0x1000");
    addNumberOption(
        command, "--render-minor-base", 0, 1u << 20,
        [&spec](uint64_t v) { spec.renderMinorBase = static_cast<int>(v); },
        std::to_string(spec.renderMinorBase), "M",
        "render minor of the first GPU (renderDM); the next ones follow");
    cmdline::addSizeOption(command, "--vram", &spec.vramBytes, "BYTES",
                           "VRAM of each GPU, with an optional suffix K, M, G or T");
}

void setup(cmdline::Program& program, cmdline::Command command) {
    auto o = std::make_shared<Options>();

    cmdline::Command show = program.addCommand(command, "show", "summarise a KFD topology tree");
    show.addOption("--root", o->root, "the tree to read")
        .typeName("DIR")
        .defaultText(topology::kKfdSysfsTopologyRoot);
    show.addFlag("--json", o->json, "print one JSON object instead of the summary");
    program.onRun(show, [o] { return cmdShow(*o); });

    cmdline::Command match = program.addCommand(
        command, "match", "map the GPUs of one tree onto those of another as a restore would",
        "Maps the GPUs of --src onto those of --dst with the plugin's rules and configuration "
        "(KFD_*_CHECK, CRIU_AMDGPU_* variables, /etc/criu/amdgpu.yaml).\n\n"
        "Exit status: 0 when a mapping exists, 2 when none does, 1 on bad input.");
    match.addOption("--src", o->src, "the tree of the checkpointed machine")
        .typeName("DIR")
        .required();
    match.addOption("--dst", o->dst, "the tree of the machine to restore on")
        .typeName("DIR")
        .required();
    match.addFlag("--json", o->json, "print one JSON object instead of the text");
    program.onRun(match, [o] { return cmdMatch(*o); });

    cmdline::Command generate = program.addCommand(
        command, "generate", "write a synthetic MI210-like KFD topology tree",
        "Writes a synthetic MI210-like tree: GPUs round-robin over CPU nodes, hives of equal "
        "size linked by XGMI. DIR must not have a nodes directory yet.");
    generate.addOption("--out", o->out, "the directory to write the tree into")
        .typeName("DIR")
        .required();
    addGenerateOptions(generate, o->spec);
    program.onRun(generate, [o] { return cmdGenerate(*o); });
}

static CommandRegistration reg("topology", "show, match or generate KFD topologies", &setup);

} // namespace
} // namespace tools
