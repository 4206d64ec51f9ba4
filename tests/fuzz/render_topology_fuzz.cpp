// The render-node topology reader (drm::readRenderNodeTopology): the fake render-node machine of
// tests/drm with GPUs described by the preamble, one per line "MINOR PCI DEVICE_ID FAMILY CUS
// VRAM_MIB VISIBLE_MIB" (missing fields keep the fake's defaults), and the files of the input
// written over its tree (dev/, sys/).
#include "fuzz_support.h"
#include "fuzz_target.h"

#include "fake_machine.h"
#include "render_topology.h"

#include <cstdlib>
#include <set>
#include <sstream>

namespace {

constexpr unsigned kMaxGpus = 16;
constexpr unsigned kMaxDepth = 10;

void addGpus(fakedrm::FakeMachine& m, const std::string& preamble) {
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
        m.addGpu(spec, pci);
        ++count;
    }
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
    fakedrm::FakeMachine m;
    addGpus(m, files.preamble);
    fuzzsupport::writeTree(m.root.path(), files, kMaxDepth);
    (void)drm::readRenderNodeTopology(*m.kernel, m.paths);
}

std::vector<std::string> fuzzSeeds() {
    return {seed("128 0000:03:00.0 740f 141 104 65536 65536\n", true),
            seed("128 0000:03:00.0 740f 141 104 65536 65536\n"
                 "129 0001:c3:02.1 73bf 143 80 16384 256\n",
                 true),
            seed("130 0000:43:00.0\n131 0000:83:00.0 740f 141 104 65536 65536\n", false)};
}
