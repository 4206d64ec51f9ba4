#include "topology_fixtures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <regex>
#include <set>

namespace testsupport {

topology::Topology synth(unsigned gpus, unsigned hives, unsigned cpus, uint32_t gpuIdBase,
                         uint64_t vram) {
    topology::SyntheticSpec spec;
    spec.gpus = gpus;
    spec.hives = hives;
    spec.cpuNodes = cpus;
    spec.gpuIdBase = gpuIdBase;
    spec.vramBytes = vram;
    return topology::makeSyntheticTopology(spec);
}

topology::Node& gpuAt(topology::Topology& topo, size_t i) {
    size_t seen = 0;
    for (topology::Node& n : topo.nodes)
        if (n.isGpu() && seen++ == i)
            return n;
    return topo.nodes.back();
}

uint32_t gpuIdAt(const topology::Topology& topo, size_t i) {
    return topo.gpus().at(i)->gpuId;
}

void setVram(topology::Node& gpu, uint64_t bytes) {
    gpu.set("local_mem_size", 0);
    for (topology::MemBank& b : gpu.memBanks)
        if (b.heapType == 1 || b.heapType == 2) {
            b.sizeInBytes = bytes;
            b.properties["size_in_bytes"] = bytes;
        }
}

namespace {
topology::Node* byIndex(topology::Topology& topo, uint32_t index) {
    for (topology::Node& n : topo.nodes)
        if (n.index == index)
            return &n;
    return nullptr;
}
} // namespace

void addLink(topology::Topology& topo, uint32_t from, uint32_t to, uint32_t type) {
    topology::Node* n = byIndex(topo, from);
    topology::Link l;
    l.type = type;
    l.nodeFrom = from;
    l.nodeTo = to;
    l.weight = type == 11 ? 15 : 20;
    l.properties = {{"type", type}, {"node_from", from}, {"node_to", to}, {"weight", l.weight}};
    n->ioLinks.push_back(l);
    n->set("io_links_count", n->ioLinks.size());
}

void removeLink(topology::Topology& topo, uint32_t from, uint32_t to) {
    topology::Node* n = byIndex(topo, from);
    auto& links = n->ioLinks;
    links.erase(std::remove_if(links.begin(), links.end(),
                               [&](const topology::Link& l) { return l.nodeTo == to; }),
                links.end());
    n->set("io_links_count", links.size());
}

void attachToCpu(topology::Topology& topo, uint32_t gpuIndex, uint32_t cpuIndex) {
    for (topology::Node& n : topo.nodes)
        if (!n.isGpu())
            removeLink(topo, n.index, gpuIndex);
    for (const topology::Node& n : topo.nodes)
        if (!n.isGpu())
            removeLink(topo, gpuIndex, n.index);
    addLink(topo, gpuIndex, cpuIndex, 2);
    addLink(topo, cpuIndex, gpuIndex, 2);
}

void setHives(topology::Topology& topo, const std::vector<std::vector<size_t>>& groups) {
    std::vector<uint32_t> idx;
    for (const topology::Node* g : topo.gpus())
        idx.push_back(g->index);
    for (uint32_t a : idx)
        for (uint32_t b : idx)
            if (a != b)
                removeLink(topo, a, b);
    for (size_t h = 0; h < groups.size(); ++h)
        for (size_t a : groups[h]) {
            gpuAt(topo, a).set("hive_id", groups[h].size() > 1 ? 0xabc0 + h : 0);
            for (size_t b : groups[h])
                if (a != b)
                    addLink(topo, idx[a], idx[b], 11);
        }
}

namespace {

// The topology as the rules read it, straight from the nodes (not through the matcher's model):
// links of type 2 (PCIe) and 11 (XGMI) between nodes that are present.
struct View {
    std::map<uint32_t, const topology::Node*> byIndex;
    bool has(uint32_t from, uint32_t to, uint32_t type) const {
        auto it = byIndex.find(from);
        if (it == byIndex.end() || !byIndex.count(to) || (type != 2 && type != 11))
            return false;
        for (const topology::Link& l : it->second->ioLinks)
            if (l.nodeTo == to && l.type == type)
                return true;
        return false;
    }
    bool isGpu(uint32_t index) const {
        auto it = byIndex.find(index);
        return it != byIndex.end() && it->second->isGpu();
    }
    // Kept links of `gpu` to present non-GPU nodes: (cpu, type).
    std::vector<std::pair<uint32_t, uint32_t>> cpuLinks(uint32_t gpu) const {
        std::vector<std::pair<uint32_t, uint32_t>> out;
        for (const topology::Link& l : byIndex.at(gpu)->ioLinks)
            if ((l.type == 2 || l.type == 11) && byIndex.count(l.nodeTo) && !isGpu(l.nodeTo))
                out.push_back({l.nodeTo, l.type});
        return out;
    }
    std::vector<uint32_t> cpus() const {
        std::vector<uint32_t> out;
        for (const auto& [index, node] : byIndex)
            if (!node->isGpu())
                out.push_back(index);
        return out;
    }
};

View view(const topology::Topology& t) {
    View v;
    for (const topology::Node& n : t.nodes)
        v.byIndex[n.index] = &n;
    return v;
}

// Whether the destination link gpu->cpu of `type` keeps a source GPU-CPU link of `srcType`
// (two-way when `srcTwoWay`) under the checks: XGMI stays XGMI, large BAR stays large BAR.
bool keepsCpuLink(const View& dv, uint32_t gpu, uint32_t cpu, uint32_t type, uint32_t srcType,
                  bool srcTwoWay, const settings::CompatibilityChecks& c) {
    if (c.xgmiLink && srcType == 11 && type != 11)
        return false;
    if (c.largeBar && srcTwoWay && !dv.has(cpu, gpu, type))
        return false;
    return true;
}

// Whether some injective map of the source CPU nodes onto the destination's keeps every
// GPU-CPU link of the mapped GPUs (numa-check).
bool cpuMapExists(const View& sv, const View& dv,
                  const std::map<uint32_t, const topology::Node*>& image,
                  const settings::CompatibilityChecks& c) {
    std::vector<uint32_t> srcCpus, dstCpus = dv.cpus();
    for (const auto& [si, d] : image)
        for (auto [cpu, type] : sv.cpuLinks(si))
            if (std::find(srcCpus.begin(), srcCpus.end(), cpu) == srcCpus.end())
                srcCpus.push_back(cpu);
    std::map<uint32_t, uint32_t> f;
    std::set<uint32_t> taken;
    std::function<bool(size_t)> rec = [&](size_t k) {
        if (k == srcCpus.size()) {
            for (const auto& [si, d] : image)
                for (auto [cpu, type] : sv.cpuLinks(si)) {
                    bool twoWay = sv.has(cpu, si, type);
                    bool kept = false;
                    for (auto [dcpu, dtype] : dv.cpuLinks(d->index))
                        kept |= dcpu == f[cpu] &&
                                keepsCpuLink(dv, d->index, dcpu, dtype, type, twoWay, c);
                    if (!kept)
                        return false;
                }
            return true;
        }
        for (uint32_t C : dstCpus) {
            if (taken.count(C))
                continue;
            f[srcCpus[k]] = C;
            taken.insert(C);
            if (rec(k + 1))
                return true;
            taken.erase(C);
        }
        return false;
    };
    return rec(0);
}

std::vector<std::string> violations(const topology::Topology& src, const topology::Topology& dst,
                                    const topology::MatchOptions& o,
                                    const std::map<uint32_t, uint32_t>& mapping, bool partial) {
    std::vector<std::string> bad;
    View sv = view(src), dv = view(dst);
    const settings::CompatibilityChecks& c = o.checks;
    std::map<uint32_t, const topology::Node*> image; // src index -> dst node
    std::set<uint32_t> usedDst;
    for (const topology::Node* s : src.gpus()) {
        auto it = mapping.find(s->gpuId);
        const topology::Node* d = it == mapping.end() ? nullptr : dst.findGpu(it->second);
        if (!d) {
            if (!partial)
                bad.push_back("unmapped " + std::to_string(s->gpuId));
            continue;
        }
        if (!usedDst.insert(d->gpuId).second)
            bad.push_back("duplicate destination");
        if (o.usableDstGpuIds && !o.usableDstGpuIds->count(d->gpuId))
            bad.push_back("unusable destination");
        image[s->index] = d;
        for (const char* key :
             {"simd_count", "mem_banks_count", "max_waves_per_simd", "lds_size_in_kb",
              "wave_front_size", "array_count", "simd_arrays_per_engine", "cu_per_simd_array",
              "simd_per_cu", "max_slots_scratch_cu", "vendor_id", "device_id", "num_sdma_engines",
              "num_sdma_xgmi_engines", "num_sdma_queues_per_engine", "num_cp_queues"})
            if (s->prop(key) != d->prop(key))
                bad.push_back(key);
        auto pub = [](const topology::Node* n) {
            return std::any_of(n->memBanks.begin(), n->memBanks.end(),
                               [](const topology::MemBank& b) { return b.heapType == 1; });
        };
        if (pub(s) != pub(d))
            bad.push_back("vram_public");
        if (c.capability && s->prop("capability") != d->prop("capability"))
            bad.push_back("capability");
        if (c.vramSize && d->vramSize() < s->vramSize())
            bad.push_back("vram");
        if (c.numGws && d->prop("num_gws") < s->prop("num_gws"))
            bad.push_back("num_gws");
        if (c.cachesCount && d->prop("caches_count") < s->prop("caches_count"))
            bad.push_back("caches_count");
        if (c.fwVersion && d->prop("fw_version") < s->prop("fw_version"))
            bad.push_back("fw_version");
        if (c.sdmaFwVersion && d->prop("sdma_fw_version") < s->prop("sdma_fw_version"))
            bad.push_back("sdma_fw_version");
        // Large BAR and XGMI links to CPU nodes are the GPU's own: kept whatever numa-check says.
        if (!c.numa)
            for (auto [cpu, type] : sv.cpuLinks(s->index)) {
                bool twoWay = sv.has(cpu, s->index, type);
                bool kept = false;
                for (auto [dcpu, dtype] : dv.cpuLinks(d->index))
                    kept |= keepsCpuLink(dv, d->index, dcpu, dtype, type, twoWay, c);
                if (!kept && ((c.xgmiLink && type == 11) || (c.largeBar && twoWay)))
                    bad.push_back(type == 11 && c.xgmiLink ? "xgmi to cpu" : "large bar");
            }
    }
    if (o.exactGpuCount && src.gpus().size() != dst.gpus().size())
        bad.push_back("count");
    // GPU pairs: every link a->b of type t between mapped GPUs keeps a link A->B.
    for (const auto& [a, A] : image)
        for (const auto& [b, B] : image) {
            if (a == b)
                continue;
            for (uint32_t t : {2u, 11u}) {
                if (!sv.has(a, b, t))
                    continue;
                bool xgmiOnly = c.xgmiLink && t == 11;
                if (!xgmiOnly && !c.peerLink)
                    continue;
                bool twoWay = c.peerLink && sv.has(b, a, t);
                bool kept = false;
                for (uint32_t dt : {2u, 11u}) {
                    if (xgmiOnly && dt != 11)
                        continue;
                    if (dv.has(A->index, B->index, dt) &&
                        (!twoWay || dv.has(B->index, A->index, dt)))
                        kept = true;
                }
                if (!kept)
                    bad.push_back(xgmiOnly ? "xgmi" : twoWay ? "two-way p2p" : "p2p");
            }
        }
    if (c.numa && !cpuMapExists(sv, dv, image, c))
        bad.push_back("numa");
    return bad;
}

} // namespace

std::vector<std::string> checkMapping(const topology::Topology& src, const topology::Topology& dst,
                                      const topology::MatchOptions& o,
                                      const std::map<uint32_t, uint32_t>& mapping) {
    return violations(src, dst, o, mapping, false);
}

bool bruteForceExists(const topology::Topology& src, const topology::Topology& dst,
                      const topology::MatchOptions& options) {
    std::vector<uint32_t> s, d;
    for (const topology::Node* n : src.gpus())
        s.push_back(n->gpuId);
    for (const topology::Node* n : dst.gpus())
        d.push_back(n->gpuId);
    std::map<uint32_t, uint32_t> m;
    std::vector<bool> used(d.size(), false);
    // Every rule only adds conditions as GPUs are mapped, so a partial mapping that breaks one
    // cannot be completed: those branches are cut.
    std::function<bool(size_t)> rec = [&](size_t k) {
        if (k == s.size())
            return violations(src, dst, options, m, false).empty();
        for (size_t j = 0; j < d.size(); ++j) {
            if (used[j])
                continue;
            m[s[k]] = d[j];
            if (violations(src, dst, options, m, true).empty()) {
                used[j] = true;
                if (rec(k + 1))
                    return true;
                used[j] = false;
            }
        }
        m.erase(s[k]);
        return false;
    };
    return rec(0);
}

std::string reasonsText(const topology::MatchReport& report) {
    std::string out;
    for (const std::string& line : report.reasons)
        out += line + "\n";
    return out;
}

void craftedSearchTrap(topology::Topology* src, topology::Topology* dst) {
    *src = synth(12, 1, 1);
    *dst = synth(96, 0, 1, 0x9000);
    std::mt19937 rng(2);
    std::uniform_real_distribution<double> coin(0, 1);
    for (size_t i = 0; i < 96; ++i)
        for (size_t j = i + 1; j < 96; ++j)
            if (coin(rng) < 0.5) {
                addLink(*dst, gpuAt(*dst, i).index, gpuAt(*dst, j).index, 11);
                addLink(*dst, gpuAt(*dst, j).index, gpuAt(*dst, i).index, 11);
            }
}

namespace {

using Flag = bool settings::CompatibilityChecks::*;

bool flagOf(const std::string& option, Flag* flag) {
    using C = settings::CompatibilityChecks;
    static const std::vector<std::pair<std::string, Flag>> names = {
        {"capability-check", &C::capability},
        {"vram-size-check", &C::vramSize},
        {"num-gws-check", &C::numGws},
        {"caches-count-check", &C::cachesCount},
        {"fw-version-check", &C::fwVersion},
        {"sdma-fw-version-check", &C::sdmaFwVersion},
        {"numa-check", &C::numa},
        {"large-bar-check", &C::largeBar},
        {"xgmi-link-check", &C::xgmiLink},
        {"peer-link-check", &C::peerLink}};
    for (const auto& [name, f] : names)
        if (name == option) {
            *flag = f;
            return true;
        }
    return false;
}

std::vector<std::string> optionsIn(const std::string& text) {
    static const std::regex named("([a-z0-9-]+-check)=false");
    std::vector<std::string> out;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), named);
         it != std::sregex_iterator(); ++it)
        out.push_back((*it)[1]);
    return out;
}

} // namespace

std::vector<std::vector<std::string>> offeredRelaxations(const std::vector<std::string>& reasons) {
    std::vector<std::vector<std::string>> out;
    for (const std::string& line : reasons) {
        if (line.find("together would allow a mapping") != std::string::npos) {
            out.push_back(optionsIn(line.substr(0, line.find(" together would allow"))));
            continue;
        }
        std::vector<std::string> prefix;
        if (line.rfind("with ", 0) == 0)
            prefix = optionsIn(line.substr(0, line.find(" as well: ")));
        size_t at = 0;
        while ((at = line.find("; setting ", at)) != std::string::npos) {
            size_t end = line.find(" would allow a mapping", at);
            if (end == std::string::npos)
                break;
            std::vector<std::string> set = prefix;
            for (const std::string& o : optionsIn(line.substr(at, end - at)))
                set.push_back(o);
            out.push_back(set);
            at = end;
        }
    }
    return out;
}

std::vector<std::string> unsafeRelaxations(const topology::Topology& src,
                                           const topology::Topology& dst,
                                           const topology::MatchOptions& options,
                                           const std::vector<std::string>& reasons) {
    std::vector<std::string> out;
    for (const std::vector<std::string>& set : offeredRelaxations(reasons)) {
        topology::MatchOptions relaxed = options;
        std::string names;
        for (const std::string& name : set) {
            Flag f = nullptr;
            if (!flagOf(name, &f)) {
                out.push_back("offers an unknown option " + name);
                continue;
            }
            if (!(options.checks.*f))
                out.push_back("offers " + name + ", which is already off");
            relaxed.checks.*f = false;
            names += (names.empty() ? "" : ", ") + name;
        }
        topology::MatchReport after = topology::matchTopologies(src, dst, relaxed);
        if (!after.matched) {
            out.push_back("relaxing " + names + " was said to allow a mapping, but none exists");
            continue;
        }
        std::vector<std::string> bad = checkMapping(src, dst, relaxed, after.mapping);
        if (!bad.empty())
            out.push_back("relaxing " + names + " gives a mapping that breaks " + bad.front());
    }
    return out;
}

void expectSameTopology(const topology::Topology& a, const topology::Topology& b) {
    ASSERT_EQ(a.nodes.size(), b.nodes.size());
    EXPECT_EQ(a.generationId, b.generationId);
    EXPECT_EQ(a.systemProperties, b.systemProperties);
    for (size_t i = 0; i < a.nodes.size(); ++i) {
        const topology::Node& x = a.nodes[i];
        const topology::Node& y = b.nodes[i];
        EXPECT_EQ(x.index, y.index);
        EXPECT_EQ(x.gpuId, y.gpuId);
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.properties, y.properties);
        EXPECT_EQ(x.textProperties, y.textProperties);
        ASSERT_EQ(x.memBanks.size(), y.memBanks.size());
        for (size_t m = 0; m < x.memBanks.size(); ++m) {
            EXPECT_EQ(x.memBanks[m].heapType, y.memBanks[m].heapType);
            EXPECT_EQ(x.memBanks[m].sizeInBytes, y.memBanks[m].sizeInBytes);
            EXPECT_EQ(x.memBanks[m].properties, y.memBanks[m].properties);
            EXPECT_EQ(x.memBanks[m].usedMemory, y.memBanks[m].usedMemory);
        }
        ASSERT_EQ(x.caches.size(), y.caches.size());
        for (size_t c = 0; c < x.caches.size(); ++c) {
            EXPECT_EQ(x.caches[c].properties, y.caches[c].properties);
            EXPECT_EQ(x.caches[c].textProperties, y.caches[c].textProperties);
        }
        ASSERT_EQ(x.ioLinks.size(), y.ioLinks.size());
        for (size_t l = 0; l < x.ioLinks.size(); ++l) {
            EXPECT_EQ(x.ioLinks[l].type, y.ioLinks[l].type);
            EXPECT_EQ(x.ioLinks[l].nodeFrom, y.ioLinks[l].nodeFrom);
            EXPECT_EQ(x.ioLinks[l].nodeTo, y.ioLinks[l].nodeTo);
            EXPECT_EQ(x.ioLinks[l].properties, y.ioLinks[l].properties);
        }
        EXPECT_EQ(x.p2pLinks.size(), y.p2pLinks.size());
    }
}

void expectSameReading(const base::Result<topology::Topology>& a,
                       const base::Result<topology::Topology>& b) {
    ASSERT_EQ(a.ok(), b.ok());
    if (!a.ok()) {
        EXPECT_EQ(a.error().describe(), b.error().describe());
        return;
    }
    expectSameTopology(*a, *b);
    EXPECT_EQ(a->source, b->source);
    EXPECT_EQ(a->notes, b->notes);
    EXPECT_EQ(a->skipped, b->skipped);
}

} // namespace testsupport
