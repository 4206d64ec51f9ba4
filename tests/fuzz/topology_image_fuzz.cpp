// The topology image (`amdgpu-topology.img`, amdgpu_devinfo): hal::readTopologyImage.
#include "fuzz_support.h"
#include "fuzz_target.h"
#include "topology_seeds.h"

#include "formats/topology_codec.h"

void fuzzOne(std::string_view input) {
    fuzzsupport::MemoryStore store;
    store.put(hal::kTopologyImageName, input);
    (void)hal::readTopologyImage(store);
}

std::vector<std::string> fuzzSeeds() {
    std::vector<std::string> seeds;
    for (const hal::Topology& t : fuzzsupport::seedTopologies())
        seeds.push_back(fuzzsupport::topologyImageBytes(t));
    return seeds;
}
