// criu-amdgpu topology: show a KFD sysfs tree, match two trees as a restore would, or generate a
// synthetic tree.
#include "command.h"
#include "json_writer.h"

#include "config/config.h"
#include "hal/topology_match.h"
#include "hal/topology_synth.h"
#include "hal/topology_sysfs.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace tools {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitBadInput = 1;
constexpr int kExitNoMapping = 2;

void usage(FILE* out) {
    fprintf(out,
            "usage: criu-amdgpu topology show [--root DIR] [--json]\n"
            "       criu-amdgpu topology match --src DIR --dst DIR [--json]\n"
            "       criu-amdgpu topology generate --out DIR [--gpus N] [--hives H] [--cpus C]\n"
            "                 [--gpu-id-base X] [--render-minor-base M] [--vram BYTES]\n"
            "\n"
            "show      summarise a KFD topology tree (default root %s)\n"
            "match     map the GPUs of --src onto those of --dst with the plugin's rules and\n"
            "          configuration (KFD_*_CHECK, CRIU_AMDGPU_* variables, /etc/criu/amdgpu.yaml);\n"
            "          exit 0 when a mapping exists, 2 when none does, 1 on bad input\n"
            "generate  write a synthetic MI210-like tree (GPUs round-robin over CPU nodes, hives\n"
            "          of equal size linked by XGMI); --vram accepts K, M, G, T suffixes\n",
            hal::kKfdSysfsTopologyRoot);
}

/// The settings `match` uses: the same loader as the plugin (defaults, YAML, options file,
/// environment).
hal::Result<config::Settings> loadToolSettings() {
    return config::loadSettings(config::Sources::fromProcessEnvironment());
}

bool parseNumber(const std::string& text, uint64_t* out, bool allowSuffix) {
    if (text.empty())
        return false;
    errno = 0;
    char* end = nullptr;
    unsigned long long v = strtoull(text.c_str(), &end, 0);
    if (errno || end == text.c_str() || text[0] == '-')
        return false;
    std::string suffix = end;
    uint64_t mult = 1;
    if (allowSuffix && !suffix.empty()) {
        static const std::string units = "KMGT";
        size_t pos = units.find(static_cast<char>(toupper(suffix[0])));
        if (pos == std::string::npos || (suffix.size() > 1 && suffix.substr(1) != "iB" &&
                                         suffix.substr(1) != "B" && suffix.substr(1) != "i"))
            return false;
        mult = 1ull << (10 * (pos + 1));
    } else if (!suffix.empty()) {
        return false;
    }
    if (mult > 1 && v > UINT64_MAX / mult)
        return false;
    *out = v * mult;
    return true;
}

/// Parsed "--name value" and "--flag" arguments.
struct Args {
    std::vector<std::pair<std::string, std::string>> values;
    bool json = false;
    bool help = false;
};

bool parseArgs(const std::vector<std::string>& args, size_t from,
               const std::vector<std::string>& valued, Args* out) {
    for (size_t i = from; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--json") {
            out->json = true;
            continue;
        }
        if (a == "--help" || a == "-h") {
            out->help = true;
            continue;
        }
        std::string name = a, value;
        size_t eq = a.find('=');
        if (eq != std::string::npos) {
            name = a.substr(0, eq);
            value = a.substr(eq + 1);
        }
        bool known = false;
        for (const std::string& v : valued)
            known |= v == name;
        if (!known) {
            fprintf(stderr, "criu-amdgpu topology: unknown argument '%s'\n", a.c_str());
            return false;
        }
        if (eq == std::string::npos) {
            if (i + 1 >= args.size()) {
                fprintf(stderr, "criu-amdgpu topology: %s needs a value\n", a.c_str());
                return false;
            }
            value = args[++i];
        }
        out->values.push_back({name, value});
    }
    return true;
}

std::string get(const Args& a, const std::string& name, const std::string& fallback = "") {
    std::string v = fallback;
    for (const auto& [n, value] : a.values)
        if (n == name)
            v = value;
    return v;
}

const char* kind(const hal::Node& n) {
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
    case 1: return "HyperTransport";
    case 2: return "PCIe";
    case 5: return "QPI";
    case 11: return "XGMI";
    default: return "other";
    }
}

void writeLinksJson(JsonWriter& j, const std::vector<hal::Link>& links) {
    j.beginArray();
    for (const hal::Link& l : links) {
        j.beginObject();
        j.key("type").value(l.type).key("node_from").value(l.nodeFrom).key("node_to").value(l.nodeTo);
        j.key("weight").value(l.weight);
        j.key("properties").beginObject();
        for (const auto& [k, v] : l.properties)
            j.key(k).value(v);
        j.endObject();
        j.endObject();
    }
    j.endArray();
}

void showJson(const hal::Topology& t) {
    JsonWriter j;
    j.beginObject();
    j.key("source").value(t.source);
    j.key("gpu_count").value(static_cast<uint64_t>(t.gpus().size()));
    j.key("cpu_count").value(static_cast<uint64_t>(t.cpus().size()));
    j.key("hives").beginArray();
    for (uint64_t h : t.hiveIds())
        j.value(h);
    j.endArray();
    j.key("nodes").beginArray();
    for (const hal::Node& n : t.nodes) {
        j.beginObject();
        j.key("index").value(n.index).key("kind").value(kind(n)).key("gpu_id").value(n.gpuId);
        j.key("gpu_id_derived").value(n.syntheticGpuId);
        j.key("name").value(n.name);
        j.key("vram_bytes").value(n.vramSize());
        j.key("render_minor").value(n.renderMinor());
        j.key("hive_id").value(n.hiveId());
        j.key("properties").beginObject();
        for (const auto& [k, v] : n.properties)
            j.key(k).value(v);
        j.endObject();
        j.key("mem_banks").beginArray();
        for (const hal::MemBank& b : n.memBanks) {
            j.beginObject().key("heap_type").value(b.heapType).key("size_in_bytes").value(b.sizeInBytes);
            j.endObject();
        }
        j.endArray();
        j.key("caches_read").value(static_cast<uint64_t>(n.caches.size()));
        j.key("io_links");
        writeLinksJson(j, n.ioLinks);
        j.key("p2p_links");
        writeLinksJson(j, n.p2pLinks);
        j.endObject();
    }
    j.endArray();
    j.key("skipped").beginArray();
    for (const std::string& s : t.skipped)
        j.value(s);
    j.endArray();
    j.key("notes").beginArray();
    for (const std::string& s : t.notes)
        j.value(s);
    j.endArray();
    j.endObject();
    printf("%s\n", j.str().c_str());
}

void showText(const hal::Topology& t) {
    printf("topology %s: %zu nodes, %zu CPU node(s), %zu GPU(s), %zu XGMI hive(s)\n",
           t.source.c_str(), t.nodes.size(), t.cpus().size(), t.gpus().size(), t.hiveIds().size());
    for (const hal::Node& n : t.nodes) {
        if (n.isGpu()) {
            printf("  node %-3u %-3s gpu_id %s%s device 0x%04llx renderD%d VRAM %llu MiB", n.index,
                   kind(n), hal::gpuIdHex(n.gpuId).c_str(), n.syntheticGpuId ? " (derived)" : "",
                   (unsigned long long)n.prop("device_id"), n.renderMinor(),
                   (unsigned long long)(n.vramSize() >> 20));
            if (n.hiveId())
                printf(" hive 0x%llx", (unsigned long long)n.hiveId());
            printf("\n");
        } else {
            printf("  node %-3u %-3s %llu cores\n", n.index, kind(n),
                   (unsigned long long)n.prop("cpu_cores_count"));
        }
        std::map<std::string, unsigned> counts;
        for (const hal::Link& l : n.ioLinks)
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

int cmdShow(const std::vector<std::string>& args) {
    Args a;
    if (!parseArgs(args, 1, {"--root"}, &a))
        return kExitBadInput;
    if (a.help) {
        usage(stdout);
        return kExitOk;
    }
    std::string root = get(a, "--root", hal::kKfdSysfsTopologyRoot);
    auto topo = hal::readKfdTopology(root);
    if (!topo) {
        fprintf(stderr, "criu-amdgpu topology show: %s\n", topo.error().describe().c_str());
        return kExitBadInput;
    }
    if (a.json)
        showJson(*topo);
    else
        showText(*topo);
    return kExitOk;
}

int cmdMatch(const std::vector<std::string>& args) {
    Args a;
    if (!parseArgs(args, 1, {"--src", "--dst"}, &a))
        return kExitBadInput;
    if (a.help) {
        usage(stdout);
        return kExitOk;
    }
    std::string srcDir = get(a, "--src"), dstDir = get(a, "--dst");
    if (srcDir.empty() || dstDir.empty()) {
        fprintf(stderr, "criu-amdgpu topology match: --src DIR and --dst DIR are required\n");
        return kExitBadInput;
    }
    auto settings = loadToolSettings();
    if (!settings) {
        fprintf(stderr, "criu-amdgpu topology match: %s\n", settings.error().describe().c_str());
        return kExitBadInput;
    }
    auto src = hal::readKfdTopology(srcDir);
    if (!src) {
        fprintf(stderr, "criu-amdgpu topology match: --src: %s\n", src.error().describe().c_str());
        return kExitBadInput;
    }
    auto dst = hal::readKfdTopology(dstDir);
    if (!dst) {
        fprintf(stderr, "criu-amdgpu topology match: --dst: %s\n", dst.error().describe().c_str());
        return kExitBadInput;
    }
    hal::MatchReport r = hal::matchTopologies(*src, *dst, hal::matchOptionsFromSettings(*settings));
    if (a.json) {
        JsonWriter j;
        j.beginObject().key("matched").value(r.matched).key("mapping").beginArray();
        for (const auto& [s, d] : r.mapping)
            j.beginObject().key("src_gpu_id").value(s).key("dst_gpu_id").value(d).endObject();
        j.endArray().key("reasons").beginArray();
        for (const std::string& reason : r.reasons)
            j.value(reason);
        j.endArray().endObject();
        printf("%s\n", j.str().c_str());
        for (const std::string& w : r.warnings)
            fprintf(stderr, "warning: %s\n", w.c_str());
    } else {
        for (const std::string& w : r.warnings)
            printf("warning: %s\n", w.c_str());
        if (r.matched) {
            printf("mapping (%zu GPUs):\n", r.mapping.size());
            for (const auto& [s, d] : r.mapping)
                printf("  %s -> %s\n", hal::gpuIdHex(s).c_str(), hal::gpuIdHex(d).c_str());
        } else {
            printf("no mapping:\n");
            for (const std::string& reason : r.reasons)
                printf("  %s\n", reason.c_str());
        }
    }
    return r.matched ? kExitOk : kExitNoMapping;
}

int cmdGenerate(const std::vector<std::string>& args) {
    Args a;
    if (!parseArgs(args, 1,
                   {"--out", "--gpus", "--hives", "--cpus", "--gpu-id-base", "--render-minor-base",
                    "--vram"},
                   &a))
        return kExitBadInput;
    if (a.help) {
        usage(stdout);
        return kExitOk;
    }
    std::string out = get(a, "--out");
    if (out.empty()) {
        fprintf(stderr, "criu-amdgpu topology generate: --out DIR is required\n");
        return kExitBadInput;
    }
    hal::SyntheticSpec spec;
    struct NumArg {
        const char* name;
        uint64_t max;
        bool suffix;
        uint64_t value;
    };
    std::vector<NumArg> nums = {{"--gpus", 1024, false, spec.gpus},
                                {"--hives", 1024, false, spec.hives},
                                {"--cpus", 64, false, spec.cpuNodes},
                                {"--gpu-id-base", 0xffff0000u, false, spec.gpuIdBase},
                                {"--render-minor-base", 1u << 20, false,
                                 static_cast<uint64_t>(spec.renderMinorBase)},
                                {"--vram", UINT64_MAX, true, spec.vramBytes}};
    for (NumArg& n : nums) {
        std::string text = get(a, n.name);
        if (text.empty())
            continue;
        if (!parseNumber(text, &n.value, n.suffix) || n.value > n.max) {
            fprintf(stderr, "criu-amdgpu topology generate: %s: '%s' is not a valid value\n", n.name,
                    text.c_str());
            return kExitBadInput;
        }
    }
    spec.gpus = static_cast<unsigned>(nums[0].value);
    spec.hives = static_cast<unsigned>(nums[1].value);
    spec.cpuNodes = static_cast<unsigned>(nums[2].value);
    spec.gpuIdBase = static_cast<uint32_t>(nums[3].value);
    spec.renderMinorBase = static_cast<int>(nums[4].value);
    spec.vramBytes = nums[5].value;
    if (spec.cpuNodes == 0 || spec.gpuIdBase == 0) {
        fprintf(stderr, "criu-amdgpu topology generate: --cpus and --gpu-id-base must be nonzero\n");
        return kExitBadInput;
    }
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
    if (::stat((out + "/nodes").c_str(), &st) == 0) {
        fprintf(stderr, "criu-amdgpu topology generate: %s/nodes already exists\n", out.c_str());
        return kExitBadInput;
    }
    auto written = hal::writeKfdTopology(hal::makeSyntheticTopology(spec), out);
    if (!written) {
        fprintf(stderr, "criu-amdgpu topology generate: %s\n", written.error().describe().c_str());
        return kExitBadInput;
    }
    printf("wrote %u GPU(s), %u hive(s), %u CPU node(s) to %s\n", spec.gpus, spec.hives,
           spec.cpuNodes, out.c_str());
    return kExitOk;
}

int run(const std::vector<std::string>& args) {
    if (args.empty()) {
        usage(stderr);
        return kExitBadInput;
    }
    const std::string& sub = args[0];
    if (sub == "--help" || sub == "-h" || sub == "help") {
        usage(stdout);
        return kExitOk;
    }
    if (sub == "show")
        return cmdShow(args);
    if (sub == "match")
        return cmdMatch(args);
    if (sub == "generate")
        return cmdGenerate(args);
    fprintf(stderr, "criu-amdgpu topology: unknown subcommand '%s'\n", sub.c_str());
    usage(stderr);
    return kExitBadInput;
}

static CommandRegistration reg("topology", "show, match or generate KFD topologies", &run);

} // namespace
} // namespace tools
