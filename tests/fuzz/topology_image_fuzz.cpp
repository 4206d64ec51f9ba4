// The topology image (`amdgpu-topology.img`, amdgpu_devinfo): formats::readTopologyImage.
#include "fuzz_support.h"
#include "fuzz_target.h"
#include "topology_seeds.h"

#include "formats/topology_codec.h"

void fuzzOne(std::string_view input) {
    fuzzsupport::MemoryStore store;
    store.put(formats::kTopologyImageName, input);
    (void)formats::readTopologyImage(store);
}

std::vector<std::string> fuzzSeeds() {
    std::vector<std::string> seeds;
    for (const topology::Topology& t : fuzzsupport::seedTopologies())
        seeds.push_back(fuzzsupport::topologyImageBytes(t));
    return seeds;
}
