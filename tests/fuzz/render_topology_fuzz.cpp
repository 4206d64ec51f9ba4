// The render-node topology reader (drm::readRenderNodeTopology): the fake render-node machine of
// tests/drm with GPUs described by the preamble, one per line "MINOR PCI DEVICE_ID FAMILY CUS
// VRAM_MIB VISIBLE_MIB" (missing fields keep the fake's defaults), and the files of the input
// written over its tree (dev/, sys/). Built twice: fuzz_render_topology writes the tree to a temp
// dir (FakeMachine) and the reader reads it with system calls; fuzz_render_topology_memory
// (CRIU_AMDGPU_FUZZ_IN_MEMORY) holds the same files and links in a topology::sysfs::MemoryTree,
// which the fake kernel hands the reader (FakeKernel::useFiles), and runs the same code on it.
#include "fuzz_support.h"
#include "fuzz_target.h"

#include "fake_machine.h"
#include "render_topology.h"

#include "topology/sysfs_tree.h"

#include <cstdlib>
#include <set>
#include <sstream>

namespace {

constexpr unsigned kMaxGpus = 16;
constexpr unsigned kMaxDepth = 10;

// Calls add(spec, pci) for each GPU of the preamble the fake machine can model.
template <typename Add> void addGpus(const std::string& preamble, Add add) {
    std::istringstream lines(preamble);
    std::string line;
    unsigned count = 0;
    // The fake machine models one GPU per PCI function and render minor.
    std::set<std::string> pcis;
    std::set<unsigned> minors;
    while (std::getline(lines, line) && count < kMaxGpus) {
        std::istringstream fields(line);
        fakedrm::GpuSpec spec;
        std::string pci;
        uint64_t vramMib = spec.vramSize >> 20, visibleMib = spec.visibleVram >> 20;
        fields >> spec.minor >> pci >> std::hex >> spec.deviceId >> std::dec >> spec.family >>
            spec.cus >> vramMib >> visibleMib;
        // A PCI address is one path component: "s/" would name the directory of "s" twice.
        if (pci.empty() || pci.find('/') != std::string::npos ||
            !fuzzsupport::safeRelativePath(pci, 1) || spec.minor > 1u << 20 ||
            !pcis.insert(pci).second || !minors.insert(spec.minor).second)
            continue;
        spec.vramSize = vramMib << 20;
        spec.visibleVram = visibleMib << 20;
        add(spec, pci);
        ++count;
    }
}

void addGpus(fakedrm::FakeMachine& m, const std::string& preamble) {
    addGpus(preamble,
            [&](const fakedrm::GpuSpec& spec, const std::string& pci) { m.addGpu(spec, pci); });
}

std::string seed(const std::string& preamble, bool withTree) {
    fakedrm::FakeMachine m;
    addGpus(m, preamble);
    fuzzsupport::Files files;
    if (withTree)
        files = fuzzsupport::readTree(m.root.path());
    files.preamble = preamble;
    return fuzzsupport::joinFiles(files);
}

} // namespace

void fuzzOne(std::string_view input) {
    fuzzsupport::Files files = fuzzsupport::splitFiles(input);
#if CRIU_AMDGPU_FUZZ_IN_MEMORY
    fakedrm::FakeKernel kernel;
    topology::sysfs::MemoryTree tree;
    tree.addDir("dev/dri"); // as FakeMachine makes it
    addGpus(files.preamble, [&](const fakedrm::GpuSpec& spec, const std::string& pci) {
        kernel.addGpu(spec);
        fakedrm::GpuFiles add = fakedrm::gpuFiles(spec, pci, true);
        for (const auto& [path, bytes] : add.files)
            tree.addFile(path, bytes);
        for (const std::string& dir : add.dirs)
            tree.addDir(dir);
        for (const auto& [path, target] : add.links)
            tree.addLink(path, target);
    });
    fuzzsupport::addTree(&tree, "/", files, kMaxDepth);
    kernel.useFiles(tree.root());
    drm::Paths paths; // /dev, /sys
    (void)drm::readRenderNodeTopology(kernel, paths);
#else
    fakedrm::FakeMachine m;
    addGpus(m, files.preamble);
    fuzzsupport::writeTree(m.root.path(), files, kMaxDepth);
    (void)drm::readRenderNodeTopology(*m.kernel, m.paths);
#endif
}

std::vector<std::string> fuzzSeeds() {
    return {seed("128 0000:03:00.0 740f 141 104 65536 65536\n", true),
            seed("128 0000:03:00.0 740f 141 104 65536 65536\n"
                 "129 0001:c3:02.1 73bf 143 80 16384 256\n",
                 true),
            seed("130 0000:43:00.0\n131 0000:83:00.0 740f 141 104 65536 65536\n", false)};
}
