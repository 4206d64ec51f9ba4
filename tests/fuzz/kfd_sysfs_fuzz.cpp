// The KFD sysfs topology reader (hal::readKfdTopology) on a tree built from the input (files
// format, names relative to the topology root: nodes/N/properties, ...).
#include "fuzz_support.h"
#include "fuzz_target.h"
#include "topology_seeds.h"

#include "hal/topology_sysfs.h"

#include <cstdlib>
#include <filesystem>

namespace {
constexpr unsigned kMaxDepth = 5; // nodes/N/io_links/L/properties
} // namespace

void fuzzOne(std::string_view input) {
    std::string root = fuzzsupport::scratchDir() + "/kfd";
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
    fuzzsupport::writeTree(root, fuzzsupport::splitFiles(input), kMaxDepth);
    (void)hal::readKfdTopology(root);
}

std::vector<std::string> fuzzSeeds() {
    std::vector<std::string> seeds;
    std::string root = fuzzsupport::scratchDir() + "/seed";
    for (const hal::Topology& t : fuzzsupport::seedTopologies()) {
        std::error_code ec;
        std::filesystem::remove_all(root, ec);
        if (!hal::writeKfdTopology(t, root).ok())
            abort();
        seeds.push_back(fuzzsupport::joinFiles(fuzzsupport::readTree(root)));
    }
    return seeds;
}
