#include "topology_fixtures.h"

#include <algorithm>
#include <functional>
#include <set>

namespace testsupport {

hal::Topology synth(unsigned gpus, unsigned hives, unsigned cpus, uint32_t gpuIdBase, uint64_t vram) {
    hal::SyntheticSpec spec;
    spec.gpus = gpus;
    spec.hives = hives;
    spec.cpuNodes = cpus;
    spec.gpuIdBase = gpuIdBase;
    spec.vramBytes = vram;
    return hal::makeSyntheticTopology(spec);
}

hal::Node& gpuAt(hal::Topology& topo, size_t i) {
    size_t seen = 0;
    for (hal::Node& n : topo.nodes)
        if (n.isGpu() && seen++ == i)
            return n;
    return topo.nodes.back();
}

uint32_t gpuIdAt(const hal::Topology& topo, size_t i) { return topo.gpus().at(i)->gpuId; }

void setVram(hal::Node& gpu, uint64_t bytes) {
    gpu.set("local_mem_size", 0);
    for (hal::MemBank& b : gpu.memBanks)
        if (b.heapType == 1 || b.heapType == 2) {
            b.sizeInBytes = bytes;
            b.properties["size_in_bytes"] = bytes;
        }
}

namespace {
hal::Node* byIndex(hal::Topology& topo, uint32_t index) {
    for (hal::Node& n : topo.nodes)
        if (n.index == index)
            return &n;
    return nullptr;
}
} // namespace

void addLink(hal::Topology& topo, uint32_t from, uint32_t to, uint32_t type) {
    hal::Node* n = byIndex(topo, from);
    hal::Link l;
    l.type = type;
    l.nodeFrom = from;
    l.nodeTo = to;
    l.weight = type == 11 ? 15 : 20;
    l.properties = {{"type", type}, {"node_from", from}, {"node_to", to}, {"weight", l.weight}};
    n->ioLinks.push_back(l);
    n->set("io_links_count", n->ioLinks.size());
}

void removeLink(hal::Topology& topo, uint32_t from, uint32_t to) {
    hal::Node* n = byIndex(topo, from);
    auto& links = n->ioLinks;
    links.erase(std::remove_if(links.begin(), links.end(),
                               [&](const hal::Link& l) { return l.nodeTo == to; }),
                links.end());
    n->set("io_links_count", links.size());
}

void attachToCpu(hal::Topology& topo, uint32_t gpuIndex, uint32_t cpuIndex) {
    for (hal::Node& n : topo.nodes)
        if (!n.isGpu())
            removeLink(topo, n.index, gpuIndex);
    for (const hal::Node& n : topo.nodes)
        if (!n.isGpu())
            removeLink(topo, gpuIndex, n.index);
    addLink(topo, gpuIndex, cpuIndex, 2);
    addLink(topo, cpuIndex, gpuIndex, 2);
}

void setHives(hal::Topology& topo, const std::vector<std::vector<size_t>>& groups) {
    std::vector<uint32_t> idx;
    for (const hal::Node* g : topo.gpus())
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

struct View {
    std::map<uint32_t, const hal::Node*> byIndex;
    bool link(uint32_t from, uint32_t to, uint32_t* type) const {
        auto it = byIndex.find(from);
        if (it == byIndex.end() || !byIndex.count(to))
            return false;
        for (const hal::Link& l : it->second->ioLinks)
            if (l.nodeTo == to && (l.type == 2 || l.type == 11)) {
                if (type)
                    *type = l.type;
                return true;
            }
        return false;
    }
    bool isGpu(uint32_t index) const {
        auto it = byIndex.find(index);
        return it != byIndex.end() && it->second->isGpu();
    }
};

View view(const hal::Topology& t) {
    View v;
    for (const hal::Node& n : t.nodes)
        v.byIndex[n.index] = &n;
    return v;
}

} // namespace

std::vector<std::string> checkMapping(const hal::Topology& src, const hal::Topology& dst,
                                      const hal::MatchOptions& o,
                                      const std::map<uint32_t, uint32_t>& mapping) {
    std::vector<std::string> bad;
    View sv = view(src), dv = view(dst);
    std::map<uint32_t, const hal::Node*> image; // src index -> dst node
    std::set<uint32_t> usedDst;
    for (const hal::Node* s : src.gpus()) {
        auto it = mapping.find(s->gpuId);
        const hal::Node* d = it == mapping.end() ? nullptr : dst.findGpu(it->second);
        if (!d) {
            bad.push_back("unmapped " + std::to_string(s->gpuId));
            continue;
        }
        if (!usedDst.insert(d->gpuId).second)
            bad.push_back("duplicate destination");
        if (o.usableDstGpuIds && !o.usableDstGpuIds->count(d->gpuId))
            bad.push_back("unusable destination");
        image[s->index] = d;
        for (const char* key : {"simd_count", "mem_banks_count", "max_waves_per_simd",
                                "lds_size_in_kb", "wave_front_size", "array_count",
                                "simd_arrays_per_engine", "cu_per_simd_array", "simd_per_cu",
                                "max_slots_scratch_cu", "vendor_id", "device_id",
                                "num_sdma_engines", "num_sdma_xgmi_engines",
                                "num_sdma_queues_per_engine", "num_cp_queues"})
            if (s->prop(key) != d->prop(key))
                bad.push_back(key);
        auto pub = [](const hal::Node* n) {
            return std::any_of(n->memBanks.begin(), n->memBanks.end(),
                               [](const hal::MemBank& b) { return b.heapType == 1; });
        };
        if (pub(s) != pub(d))
            bad.push_back("vram_public");
        if (o.checks.capability && s->prop("capability") != d->prop("capability"))
            bad.push_back("capability");
        if (o.checks.vramSize && d->vramSize() < s->vramSize())
            bad.push_back("vram");
        if (o.checks.numGws && d->prop("num_gws") < s->prop("num_gws"))
            bad.push_back("num_gws");
        if (o.checks.cachesCount && d->prop("caches_count") < s->prop("caches_count"))
            bad.push_back("caches_count");
        if (o.checks.fwVersion && d->prop("fw_version") < s->prop("fw_version"))
            bad.push_back("fw_version");
        if (o.checks.sdmaFwVersion && d->prop("sdma_fw_version") < s->prop("sdma_fw_version"))
            bad.push_back("sdma_fw_version");
    }
    if (o.exactGpuCount && src.gpus().size() != dst.gpus().size())
        bad.push_back("count");
    std::map<uint32_t, uint32_t> cpuMap;
    std::set<uint32_t> cpuUsed;
    for (const auto& [si, d] : image) {
        for (const hal::Link& l : sv.byIndex[si]->ioLinks) {
            if ((l.type != 2 && l.type != 11) || !sv.byIndex.count(l.nodeTo))
                continue;
            bool reverse = sv.link(l.nodeTo, si, nullptr);
            if (sv.isGpu(l.nodeTo)) {
                if (l.type != 11)
                    continue;
                const hal::Node* dt = image.count(l.nodeTo) ? image[l.nodeTo] : nullptr;
                uint32_t t = 0;
                if (!dt || !dv.link(d->index, dt->index, &t) || t != 11)
                    bad.push_back("xgmi");
                else if (reverse && !dv.link(dt->index, d->index, nullptr))
                    bad.push_back("bidirectional");
                continue;
            }
            if (!o.checks.numa)
                continue;
            auto cm = cpuMap.find(l.nodeTo);
            bool ok = false;
            for (const hal::Link& m : d->ioLinks) {
                if ((m.type != 2 && m.type != 11) || dv.isGpu(m.nodeTo) || !dv.byIndex.count(m.nodeTo))
                    continue;
                if (l.type == 11 && m.type != 11)
                    continue;
                if (reverse && !dv.link(m.nodeTo, d->index, nullptr))
                    continue;
                if (cm != cpuMap.end() ? cm->second == m.nodeTo : !cpuUsed.count(m.nodeTo)) {
                    if (cm == cpuMap.end()) {
                        cpuMap[l.nodeTo] = m.nodeTo;
                        cpuUsed.insert(m.nodeTo);
                    }
                    ok = true;
                    break;
                }
            }
            if (!ok)
                bad.push_back("numa");
        }
    }
    return bad;
}

bool bruteForceExists(const hal::Topology& src, const hal::Topology& dst,
                      const hal::MatchOptions& options) {
    std::vector<uint32_t> s, d;
    for (const hal::Node* n : src.gpus())
        s.push_back(n->gpuId);
    for (const hal::Node* n : dst.gpus())
        d.push_back(n->gpuId);
    std::map<uint32_t, uint32_t> m;
    std::vector<bool> used(d.size(), false);
    std::function<bool(size_t)> rec = [&](size_t k) {
        if (k == s.size())
            return checkMapping(src, dst, options, m).empty();
        for (size_t j = 0; j < d.size(); ++j) {
            if (used[j])
                continue;
            used[j] = true;
            m[s[k]] = d[j];
            if (rec(k + 1))
                return true;
            used[j] = false;
        }
        m.erase(s[k]);
        return false;
    };
    return rec(0);
}

} // namespace testsupport
