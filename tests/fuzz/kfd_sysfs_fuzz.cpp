// The KFD sysfs topology reader (topology::readKfdTopology) on a tree built from the input (files
// format, names relative to the topology root: nodes/N/properties, ...). Built twice:
// fuzz_kfd_sysfs writes the tree to a scratch directory and reads it with system calls (the reader
// as a plugin run uses it); fuzz_kfd_sysfs_memory (CRIU_AMDGPU_FUZZ_IN_MEMORY) holds the same tree
// in a topology::sysfs::MemoryTree and runs the same parsing code on it (tests/fuzz/README.md says
// how much faster).
#include "fuzz_support.h"
#include "fuzz_target.h"
#include "topology_seeds.h"

#include "topology/sysfs.h"
#include "topology/sysfs_tree.h"

#include <cstdlib>
#include <filesystem>

namespace {

constexpr unsigned kMaxDepth = 5; // nodes/N/io_links/L/properties

} // namespace

void fuzzOne(std::string_view input) {
#if CRIU_AMDGPU_FUZZ_IN_MEMORY
    topology::sysfs::MemoryTree tree;
    fuzzsupport::addTree(&tree, "/kfd", fuzzsupport::splitFiles(input), kMaxDepth);
    (void)topology::readKfdTopology(tree.root(), "/kfd");
#else
    std::string root = fuzzsupport::scratchDir() + "/kfd";
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
    fuzzsupport::writeTree(root, fuzzsupport::splitFiles(input), kMaxDepth);
    (void)topology::readKfdTopology(root);
#endif
}

std::vector<std::string> fuzzSeeds() {
    std::vector<std::string> seeds;
    std::string root = fuzzsupport::scratchDir() + "/seed";
    for (const topology::Topology& t :
         fuzzsupport::seedTopologies(fuzzsupport::SeedSize::Compact)) {
        std::error_code ec;
        std::filesystem::remove_all(root, ec);
        if (!topology::writeKfdTopology(t, root).ok())
            abort();
        seeds.push_back(fuzzsupport::joinFiles(fuzzsupport::readTree(root)));
    }
    return seeds;
}
