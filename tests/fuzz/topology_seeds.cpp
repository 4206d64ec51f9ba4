#include "topology_seeds.h"

#include "fuzz_support.h"

#include "formats/topology_codec.h"
#include "topology/synth.h"

#include <cstdlib>

namespace fuzzsupport {

namespace {

constexpr size_t kCompactCachesPerNode = 2;

topology::Topology withFewCaches(topology::Topology t) {
    for (topology::Node& n : t.nodes) {
        if (n.caches.size() > kCompactCachesPerNode)
            n.caches.resize(kCompactCachesPerNode);
        if (n.properties.count("caches_count"))
            n.set("caches_count", n.caches.size());
    }
    return t;
}

} // namespace

std::vector<topology::Topology> seedTopologies(SeedSize size) {
    bool compact = size == SeedSize::Compact;
    std::vector<topology::Topology> out;
    topology::SyntheticSpec one;
    out.push_back(topology::makeSyntheticTopology(one));
    topology::SyntheticSpec numa;
    numa.cpuNodes = 2;
    numa.gpus = 4;
    out.push_back(topology::makeSyntheticTopology(numa));
    topology::SyntheticSpec hives;
    hives.cpuNodes = 2;
    hives.gpus = compact ? 4 : 8;
    hives.hives = 2;
    out.push_back(topology::makeSyntheticTopology(hives));
    topology::SyntheticSpec other;
    other.gpus = 2;
    other.deviceId = 0x73bf;
    other.vramBytes = 16ull << 30;
    other.gpuIdBase = 0xa000;
    out.push_back(topology::makeSyntheticTopology(other));
    if (compact)
        for (topology::Topology& t : out)
            t = withFewCaches(std::move(t));
    return out;
}

std::string topologyImageBytes(const topology::Topology& topology) {
    MemoryStore store;
    if (!formats::writeTopologyImage(store, topology).ok())
        abort();
    return store.images().at(formats::kTopologyImageName);
}

} // namespace fuzzsupport
