// `topology match` on two fuzzed topologies (topology::matchTopologies), read from topology images
// (files "src" and "dst"). The preamble's first line holds options: a hex mask (bit 0..6 relax
// the compatibility checks, bit 7 exact GPU count, bit 8 force single GPU) and a device map.
// A mapping the matcher returns without device map or forcing must obey every rule, as an
// independent checker (tests/support) sees them.
#include "fuzz_support.h"
#include "fuzz_target.h"
#include "topology_seeds.h"

#include "config/value_parsers.h"
#include "formats/topology_codec.h"
#include "topology/match.h"
#include "topology_fixtures.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace {

// The search is exponential in the worst case and budgeted elsewhere; the harness checks
// correctness on machines of a size where every case finishes quickly.
constexpr size_t kMaxGpus = 8;

topology::MatchOptions options(const std::string& preamble) {
    std::istringstream in(preamble);
    unsigned mask = 0;
    std::string map;
    in >> std::hex >> mask >> map;
    topology::MatchOptions o;
    bool* checks[] = {&o.checks.fwVersion, &o.checks.sdmaFwVersion, &o.checks.cachesCount,
                      &o.checks.numGws,    &o.checks.vramSize,      &o.checks.numa,
                      &o.checks.capability};
    for (size_t i = 0; i < std::size(checks); ++i)
        *checks[i] = !(mask & (1u << i));
    o.exactGpuCount = mask & (1u << 7);
    o.forceSingleGpu = mask & (1u << 8);
    if (auto parsed = config::parseDeviceMap(map); parsed.ok())
        o.deviceMap = *parsed;
    return o;
}

} // namespace

void fuzzOne(std::string_view input) {
    fuzzsupport::Files files = fuzzsupport::splitFiles(input);
    fuzzsupport::MemoryStore src, dst;
    for (const auto& [name, bytes] : files.files)
        (name == "src" ? src : dst).put(formats::kTopologyImageName, bytes);
    auto s = formats::readTopologyImage(src);
    auto d = formats::readTopologyImage(dst);
    if (!s.ok() || !d.ok() || s->gpus().size() > kMaxGpus || d->gpus().size() > kMaxGpus)
        return;
    topology::MatchOptions o = options(files.preamble);
    topology::MatchReport report = topology::matchTopologies(*s, *d, o);
    if (!report.matched || !o.deviceMap.empty() || o.forceSingleGpu)
        return;
    std::vector<std::string> broken = testsupport::checkMapping(*s, *d, o, report.mapping);
    if (!broken.empty()) {
        fprintf(stderr, "the matcher returned a mapping that breaks: %s\n", broken[0].c_str());
        abort();
    }
}

std::vector<std::string> fuzzSeeds() {
    std::vector<topology::Topology> t = fuzzsupport::seedTopologies();
    std::vector<std::string> seeds;
    const char* preambles[] = {"0", "20", "80", "100", "7f 0x1000=0x1111"};
    for (size_t i = 0; i < t.size(); ++i) {
        fuzzsupport::Files f;
        f.preamble = preambles[i % std::size(preambles)];
        f.files.emplace_back("src", fuzzsupport::topologyImageBytes(t[i]));
        f.files.emplace_back("dst", fuzzsupport::topologyImageBytes(t[(i + 1) % t.size()]));
        seeds.push_back(fuzzsupport::joinFiles(f));
        f.files[1].second = f.files[0].second;
        seeds.push_back(fuzzsupport::joinFiles(f));
    }
    return seeds;
}
