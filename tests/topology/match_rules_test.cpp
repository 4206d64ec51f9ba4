// The matching rules one by one (reference-amdgpu-plugin.md, "GPU matching at restore").
#include "config/option_table.h"
#include "topology/match.h"
#include "topology_fixtures.h"

#include <gtest/gtest.h>

namespace {

using testsupport::gpuAt;
using testsupport::gpuIdAt;
using testsupport::synth;

topology::MatchReport match(const topology::Topology& s, const topology::Topology& d,
                            const topology::MatchOptions& o = {}) {
    topology::MatchReport r = topology::matchTopologies(s, d, o);
    if (r.matched) {
        EXPECT_TRUE(testsupport::checkMapping(s, d, o, r.mapping).empty());
    }
    return r;
}

class EqualProperty : public ::testing::TestWithParam<const char*> {};

TEST_P(EqualProperty, MustBeEqualAndCannotBeRelaxed) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    gpuAt(d, 0).set(GetParam(), gpuAt(s, 0).prop(GetParam()) + 1);
    topology::MatchOptions all;
    all.checks = {false, false, false, false, false, false, false, false, false, false};
    topology::MatchReport r = match(s, d, all);
    EXPECT_FALSE(r.matched);
    ASSERT_EQ(r.reasons.size(), 1u);
    EXPECT_NE(r.reasons[0].find(GetParam()), std::string::npos) << r.reasons[0];
    EXPECT_NE(r.reasons[0].find("cannot be relaxed"), std::string::npos) << r.reasons[0];
}

INSTANTIATE_TEST_SUITE_P(Rules, EqualProperty,
                         ::testing::Values("simd_count", "mem_banks_count", "max_waves_per_simd",
                                           "lds_size_in_kb", "wave_front_size", "array_count",
                                           "simd_arrays_per_engine", "cu_per_simd_array",
                                           "simd_per_cu", "max_slots_scratch_cu", "vendor_id",
                                           "device_id", "num_sdma_engines", "num_sdma_xgmi_engines",
                                           "num_sdma_queues_per_engine", "num_cp_queues"));

TEST(MatchRules, VramPublicMustBeEqual) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    gpuAt(d, 0).memBanks[0].heapType = 2; // private FB only
    EXPECT_FALSE(match(s, d).matched);
}

class NeverCompared : public ::testing::TestWithParam<const char*> {};

TEST_P(NeverCompared, DifferenceDoesNotMatter) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    gpuAt(d, 0).set(GetParam(), gpuAt(s, 0).prop(GetParam()) + 7);
    EXPECT_TRUE(match(s, d).matched);
}

INSTANTIATE_TEST_SUITE_P(Rules, NeverCompared,
                         ::testing::Values("domain", "hive_id", "drm_render_minor",
                                           "io_links_count", "location_id", "unique_id"));

/// A relaxable check: the property, whether dst >= src suffices, and the flag.
struct Relaxable {
    const char* key;
    bool atLeast;
    bool settings::CompatibilityChecks::*flag;
    const char* env;
};

class RelaxableCheck : public ::testing::TestWithParam<Relaxable> {
protected:
    void apply(topology::Node& n, uint64_t value) {
        if (std::string(GetParam().key) == "vram")
            testsupport::setVram(n, value);
        else
            n.set(GetParam().key, value);
    }
    uint64_t base() { return std::string(GetParam().key) == "vram" ? (64ull << 30) : 100; }
};

TEST_P(RelaxableCheck, SmallerOrDifferentFailsWhenEnabled) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    apply(gpuAt(s, 0), base());
    apply(gpuAt(d, 0), base() - 1);
    topology::MatchReport r = match(s, d);
    EXPECT_FALSE(r.matched);
    ASSERT_EQ(r.reasons.size(), 1u);
    EXPECT_NE(r.reasons[0].find(GetParam().env), std::string::npos) << r.reasons[0];
}

TEST_P(RelaxableCheck, PassesWhenDisabled) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    apply(gpuAt(s, 0), base());
    apply(gpuAt(d, 0), base() - 1);
    topology::MatchOptions o;
    o.checks.*GetParam().flag = false;
    EXPECT_TRUE(match(s, d, o).matched);
}

TEST_P(RelaxableCheck, LargerDestinationPassesOnlyForAtLeastChecks) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    apply(gpuAt(s, 0), base());
    apply(gpuAt(d, 0), base() + 1);
    EXPECT_EQ(match(s, d).matched, GetParam().atLeast);
}

INSTANTIATE_TEST_SUITE_P(
    Rules, RelaxableCheck,
    ::testing::Values(
        Relaxable{"capability", false, &settings::CompatibilityChecks::capability,
                  "KFD_CAPABILITY_CHECK"},
        Relaxable{"vram", true, &settings::CompatibilityChecks::vramSize, "KFD_VRAM_SIZE_CHECK"},
        Relaxable{"num_gws", true, &settings::CompatibilityChecks::numGws, "KFD_NUM_GWS_CHECK"},
        Relaxable{"caches_count", true, &settings::CompatibilityChecks::cachesCount,
                  "KFD_CACHES_COUNT_CHECK"},
        Relaxable{"fw_version", true, &settings::CompatibilityChecks::fwVersion,
                  "KFD_FW_VER_CHECK"},
        Relaxable{"sdma_fw_version", true, &settings::CompatibilityChecks::sdmaFwVersion,
                  "KFD_SDMA_FW_VER_CHECK"}));

TEST(MatchRules, IdenticalMachinesMapEveryGpuToItself) {
    topology::Topology t = synth(8, 2, 2);
    topology::MatchReport r = match(t, t);
    ASSERT_TRUE(r.matched);
    for (const auto& [s, d] : r.mapping)
        EXPECT_EQ(s, d);
}

TEST(MatchRules, XgmiLinkedPairMustLandOnXgmiLinkedPair) {
    topology::Topology s = synth(2, 1), d = synth(2, 0, 1, 0x2000);
    topology::MatchReport r = match(s, d);
    EXPECT_FALSE(r.matched);
    ASSERT_FALSE(r.reasons.empty());
    EXPECT_NE(r.reasons[0].find("XGMI"), std::string::npos) << r.reasons[0];
}

TEST(MatchRules, PcieSourceMayLandOnXgmiLinkedDestination) {
    EXPECT_TRUE(match(synth(2), synth(2, 1, 1, 0x2000)).matched);
}

TEST(MatchRules, XgmiPairPicksTheLinkedDestinationPair) {
    topology::Topology s = synth(2, 1);
    topology::Topology d = synth(4, 0, 1, 0x2000);
    testsupport::setHives(d, {{0}, {1, 3}, {2}});
    topology::MatchReport r = match(s, d);
    ASSERT_TRUE(r.matched);
    std::set<uint32_t> used{r.mapping.at(gpuIdAt(s, 0)), r.mapping.at(gpuIdAt(s, 1))};
    EXPECT_EQ(used, (std::set<uint32_t>{gpuIdAt(d, 1), gpuIdAt(d, 3)}));
}

TEST(MatchRules, BidirectionalLinkCannotBecomeOneWay) {
    topology::Topology s = synth(2, 1), d = synth(2, 1, 1, 0x2000);
    testsupport::removeLink(d, gpuAt(d, 1).index, gpuAt(d, 0).index);
    EXPECT_FALSE(match(s, d).matched);
}

TEST(MatchRules, OneWayLinkMayBecomeBidirectional) {
    topology::Topology s = synth(2, 1), d = synth(2, 1, 1, 0x2000);
    testsupport::removeLink(s, gpuAt(s, 1).index, gpuAt(s, 0).index);
    EXPECT_TRUE(match(s, d).matched);
}

TEST(MatchRules, PeerToPeerPcieLinkMustBeKept) {
    topology::Topology s = synth(2), d = synth(2, 0, 1, 0x2000);
    testsupport::addLink(s, gpuAt(s, 0).index, gpuAt(s, 1).index, 2);
    topology::MatchReport r = match(s, d);
    EXPECT_FALSE(r.matched);
    ASSERT_FALSE(r.reasons.empty());
    EXPECT_NE(
        r.reasons[0].find("peer-link-check=false (CRIU_AMDGPU_PEER_LINK_CHECK=0) would allow"),
        std::string::npos)
        << r.reasons[0];
    topology::MatchOptions o;
    o.checks.peerLink = false;
    EXPECT_TRUE(match(s, d, o).matched);
}

TEST(MatchRules, PeerToPeerLinkKeepsItsDirection) {
    // Source 0->1 only; destination 1->0 only: the mapping must turn the pair around.
    topology::Topology s = synth(2), d = synth(2, 0, 1, 0x2000);
    testsupport::addLink(s, gpuAt(s, 0).index, gpuAt(s, 1).index, 2);
    testsupport::addLink(d, gpuAt(d, 1).index, gpuAt(d, 0).index, 2);
    topology::MatchReport r = match(s, d);
    ASSERT_TRUE(r.matched);
    EXPECT_EQ(r.mapping.at(gpuIdAt(s, 0)), gpuIdAt(d, 1));
}

TEST(MatchRules, TwoWayPeerToPeerLinkCannotBecomeOneWay) {
    topology::Topology s = synth(2), d = synth(2, 0, 1, 0x2000);
    testsupport::addLink(s, gpuAt(s, 0).index, gpuAt(s, 1).index, 2);
    testsupport::addLink(s, gpuAt(s, 1).index, gpuAt(s, 0).index, 2);
    testsupport::addLink(d, gpuAt(d, 0).index, gpuAt(d, 1).index, 2);
    EXPECT_FALSE(match(s, d).matched);
    testsupport::addLink(d, gpuAt(d, 1).index, gpuAt(d, 0).index, 2);
    EXPECT_TRUE(match(s, d).matched);
}

TEST(MatchRules, PeerToPeerLinkMayBecomeXgmi) {
    topology::Topology s = synth(2), d = synth(2, 1, 1, 0x2000);
    testsupport::addLink(s, gpuAt(s, 0).index, gpuAt(s, 1).index, 2);
    testsupport::addLink(s, gpuAt(s, 1).index, gpuAt(s, 0).index, 2);
    EXPECT_TRUE(match(s, d).matched);
}

TEST(MatchRules, AReturnLinkOfAnotherTypeIsNotTwoWay) {
    // Source: two-way PCIe. Destination: XGMI one way, PCIe back; each direction has a link, but
    // no link with a return of its own type: not two-way.
    topology::Topology s = synth(2), d = synth(2, 0, 1, 0x2000);
    testsupport::addLink(s, gpuAt(s, 0).index, gpuAt(s, 1).index, 2);
    testsupport::addLink(s, gpuAt(s, 1).index, gpuAt(s, 0).index, 2);
    testsupport::addLink(d, gpuAt(d, 0).index, gpuAt(d, 1).index, 11);
    testsupport::addLink(d, gpuAt(d, 1).index, gpuAt(d, 0).index, 2);
    EXPECT_FALSE(match(s, d).matched);
    topology::MatchOptions o;
    o.checks.peerLink = false;
    EXPECT_TRUE(match(s, d, o).matched);
}

TEST(MatchRules, XgmiLinkToTheCpuStaysXgmiWhateverNumaCheckSays) {
    // Source GPU linked to its CPU node by XGMI both ways; destination by PCIe both ways.
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    uint32_t g = gpuAt(s, 0).index;
    testsupport::removeLink(s, g, 0);
    testsupport::removeLink(s, 0, g);
    testsupport::addLink(s, g, 0, 11);
    testsupport::addLink(s, 0, g, 11);
    topology::MatchOptions o;
    EXPECT_FALSE(match(s, d, o).matched);
    o.checks.numa = false;
    EXPECT_FALSE(match(s, d, o).matched);
    o.checks.xgmiLink = false;
    EXPECT_TRUE(match(s, d, o).matched);
}

TEST(MatchRules, LargeBarIsKeptWhateverNumaCheckSays) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    testsupport::removeLink(d, 0, gpuAt(d, 0).index); // the CPU node no longer links back
    topology::MatchOptions o;
    o.checks.numa = false;
    topology::MatchReport r = match(s, d, o);
    EXPECT_FALSE(r.matched);
    ASSERT_FALSE(r.reasons.empty());
    EXPECT_NE(r.reasons[0].find("large BAR"), std::string::npos) << r.reasons[0];
    o.checks.largeBar = false;
    EXPECT_TRUE(match(s, d, o).matched);
}

TEST(MatchRules, GpusSharingACpuMustShareOneOnTheDestination) {
    topology::Topology s = synth(2, 0, 1), d = synth(2, 0, 2, 0x2000); // d: one GPU per CPU
    topology::MatchReport r = match(s, d);
    EXPECT_FALSE(r.matched);
    ASSERT_FALSE(r.reasons.empty());
    EXPECT_NE(r.reasons[0].find("KFD_NUMA_CHECK=0"), std::string::npos) << r.reasons[0];
    topology::MatchOptions o;
    o.checks.numa = false;
    EXPECT_TRUE(match(s, d, o).matched);
}

TEST(MatchRules, GpusOnDistinctCpusMustStayOnDistinctCpus) {
    topology::Topology s = synth(2, 0, 2), d = synth(2, 0, 2, 0x2000);
    testsupport::attachToCpu(d, gpuAt(d, 1).index, 0);
    EXPECT_FALSE(match(s, d).matched);
    topology::MatchOptions o;
    o.checks.numa = false;
    EXPECT_TRUE(match(s, d, o).matched);
}

TEST(MatchRules, NumaGroupsMapConsistently) {
    topology::Topology s = synth(4, 0, 2); // GPUs 0,2 on CPU 0; 1,3 on CPU 1
    topology::Topology d = synth(4, 0, 2, 0x2000);
    testsupport::attachToCpu(d, gpuAt(d, 0).index, 1); // d: 1,0? -> {0,1,3} vs {2}
    EXPECT_FALSE(match(s, d).matched);
    testsupport::attachToCpu(d, gpuAt(d, 3).index, 0); // d: {0,1} on CPU1, {2,3} on CPU0
    topology::MatchReport r = match(s, d);
    ASSERT_TRUE(r.matched);
}

TEST(MatchRules, SupersetRestoreIsAllowedByDefault) {
    topology::MatchReport r = match(synth(2), synth(4, 0, 1, 0x2000));
    EXPECT_TRUE(r.matched);
    EXPECT_EQ(r.mapping.size(), 2u);
}

TEST(MatchRules, ExactGpuCountRejectsALargerDestination) {
    topology::MatchOptions o;
    o.exactGpuCount = true;
    topology::MatchReport r = match(synth(2), synth(4, 0, 1, 0x2000), o);
    EXPECT_FALSE(r.matched);
    ASSERT_EQ(r.reasons.size(), 1u);
    EXPECT_NE(r.reasons[0].find("exact-gpu-count"), std::string::npos);
}

// Found by the CI fuzz run (corpus regress-exact-count-no-source-gpus): a checkpoint without GPUs
// was answered "matched" onto a machine with GPUs before exact-gpu-count was looked at.
TEST(MatchRules, ExactGpuCountHoldsForACheckpointWithoutGpus) {
    topology::MatchOptions exact;
    exact.exactGpuCount = true;
    topology::MatchReport r = match(synth(0), synth(2, 0, 1, 0x2000), exact);
    EXPECT_FALSE(r.matched);
    ASSERT_EQ(r.reasons.size(), 1u);
    EXPECT_NE(r.reasons[0].find("the checkpoint used 0 GPUs and the destination has 2 usable"),
              std::string::npos)
        << r.reasons[0];
    EXPECT_TRUE(match(synth(0), synth(0, 0, 1, 0x2000), exact).matched) << "0 onto 0 is exact";
    topology::MatchReport loose = match(synth(0), synth(2, 0, 1, 0x2000));
    EXPECT_TRUE(loose.matched) << "without the option, nothing to map is a match";
    EXPECT_TRUE(loose.mapping.empty());
}

TEST(MatchRules, MoreSourceGpusThanDestinationFails) {
    topology::MatchReport r = match(synth(4), synth(2, 0, 1, 0x2000));
    EXPECT_FALSE(r.matched);
    ASSERT_EQ(r.reasons.size(), 1u);
    EXPECT_NE(r.reasons[0].find("only 2 usable"), std::string::npos) << r.reasons[0];
}

TEST(MatchRules, UsableSubsetRestrictsCandidates) {
    topology::Topology s = synth(1), d = synth(8, 0, 1, 0x2000);
    topology::MatchOptions o;
    o.usableDstGpuIds = std::set<uint32_t>{gpuIdAt(d, 5)};
    topology::MatchReport r = match(s, d, o);
    ASSERT_TRUE(r.matched);
    EXPECT_EQ(r.mapping.at(gpuIdAt(s, 0)), gpuIdAt(d, 5));
}

TEST(MatchRules, UsableSubsetTooSmallFails) {
    topology::Topology s = synth(2), d = synth(8, 0, 1, 0x2000);
    topology::MatchOptions o;
    o.usableDstGpuIds = std::set<uint32_t>{gpuIdAt(d, 5)};
    EXPECT_FALSE(match(s, d, o).matched);
}

TEST(MatchRules, DeviceMapByGpuIdIsHonoured) {
    topology::Topology s = synth(2), d = synth(4, 0, 1, 0x2000);
    topology::MatchOptions o;
    o.deviceMap.push_back({gpuIdAt(s, 0), gpuIdAt(d, 3), -1});
    topology::MatchReport r = match(s, d, o);
    ASSERT_TRUE(r.matched);
    EXPECT_EQ(r.mapping.at(gpuIdAt(s, 0)), gpuIdAt(d, 3));
    EXPECT_NE(r.mapping.at(gpuIdAt(s, 1)), gpuIdAt(d, 3));
}

TEST(MatchRules, DeviceMapByRenderMinorIsHonoured) {
    topology::Topology s = synth(2), d = synth(4, 0, 1, 0x2000);
    topology::MatchOptions o;
    o.deviceMap.push_back({gpuIdAt(s, 1), 0, 130});
    topology::MatchReport r = match(s, d, o);
    ASSERT_TRUE(r.matched);
    EXPECT_EQ(r.mapping.at(gpuIdAt(s, 1)), d.findRenderMinor(130)->gpuId);
}

TEST(MatchRules, DeviceMapThatBreaksARuleIsAppliedWithAWarning) {
    topology::Topology s = synth(1), d = synth(2, 0, 1, 0x2000);
    testsupport::setVram(gpuAt(d, 1), 1ull << 30);
    topology::MatchOptions o;
    o.deviceMap.push_back({gpuIdAt(s, 0), gpuIdAt(d, 1), -1});
    topology::MatchReport r = topology::matchTopologies(s, d, o);
    ASSERT_TRUE(r.matched);
    EXPECT_EQ(r.mapping.at(gpuIdAt(s, 0)), gpuIdAt(d, 1));
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_NE(r.warnings[0].find("VRAM"), std::string::npos) << r.warnings[0];
}

TEST(MatchRules, DeviceMapConstrainsTheOtherGpus) {
    // s: hive {0,1}; forcing 0 onto d's GPU 2 leaves only its XGMI peer 3 for GPU 1.
    topology::Topology s = synth(2, 1), d = synth(4, 2, 1, 0x2000);
    topology::MatchOptions o;
    o.deviceMap.push_back({gpuIdAt(s, 0), gpuIdAt(d, 2), -1});
    topology::MatchReport r = match(s, d, o);
    ASSERT_TRUE(r.matched);
    EXPECT_EQ(r.mapping.at(gpuIdAt(s, 1)), gpuIdAt(d, 3));
}

TEST(MatchRules, DeviceMapNamingAMissingDestinationFails) {
    topology::Topology s = synth(1), d = synth(2, 0, 1, 0x2000);
    topology::MatchOptions o;
    o.deviceMap.push_back({gpuIdAt(s, 0), 0, 200});
    topology::MatchReport r = topology::matchTopologies(s, d, o);
    EXPECT_FALSE(r.matched);
    ASSERT_EQ(r.reasons.size(), 1u);
    EXPECT_NE(r.reasons[0].find("no destination GPU has render minor 200"), std::string::npos)
        << r.reasons[0];
    o.deviceMap = {{gpuIdAt(s, 0), 0xdead, -1}};
    r = topology::matchTopologies(s, d, o);
    ASSERT_EQ(r.reasons.size(), 1u);
    EXPECT_NE(r.reasons[0].find("no GPU 0xdead"), std::string::npos) << r.reasons[0];
}

TEST(MatchRules, DeviceMapNamingAMissingSourceFails) {
    topology::Topology s = synth(1), d = synth(2, 0, 1, 0x2000);
    topology::MatchOptions o;
    o.deviceMap.push_back({0xbeef, gpuIdAt(d, 0), -1});
    topology::MatchReport r = topology::matchTopologies(s, d, o);
    EXPECT_FALSE(r.matched);
    ASSERT_EQ(r.reasons.size(), 1u);
    EXPECT_NE(r.reasons[0].find("no source GPU 0xbeef"), std::string::npos) << r.reasons[0];
}

TEST(MatchRules, DeviceMapWithTwoSourcesOnOneDestinationFails) {
    topology::Topology s = synth(2), d = synth(2, 0, 1, 0x2000);
    topology::MatchOptions o;
    o.deviceMap = {{gpuIdAt(s, 0), gpuIdAt(d, 0), -1}, {gpuIdAt(s, 1), gpuIdAt(d, 0), -1}};
    EXPECT_FALSE(topology::matchTopologies(s, d, o).matched);
}

TEST(MatchRules, ForceSingleGpuPutsEverySourceOnOneDestination) {
    topology::Topology s = synth(4, 2, 2), d = synth(1, 0, 1, 0x2000);
    topology::MatchOptions o;
    o.forceSingleGpu = true;
    topology::MatchReport r = topology::matchTopologies(s, d, o);
    ASSERT_TRUE(r.matched);
    ASSERT_EQ(r.mapping.size(), 4u);
    for (const auto& [src, dst] : r.mapping)
        EXPECT_EQ(dst, gpuIdAt(d, 0));
    EXPECT_TRUE(r.warnings.empty());
}

TEST(MatchRules, ForceSingleGpuPrefersACompatibleDestination) {
    topology::Topology s = synth(2), d = synth(3, 0, 1, 0x2000);
    testsupport::setVram(gpuAt(d, 0), 1ull << 30);
    topology::MatchOptions o;
    o.forceSingleGpu = true;
    topology::MatchReport r = topology::matchTopologies(s, d, o);
    ASSERT_TRUE(r.matched);
    EXPECT_EQ(r.mapping.at(gpuIdAt(s, 0)), gpuIdAt(d, 1));
}

TEST(MatchRules, ForceSingleGpuWithoutACompatibleDestinationWarns) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    testsupport::setVram(gpuAt(d, 0), 1ull << 30);
    topology::MatchOptions o;
    o.forceSingleGpu = true;
    topology::MatchReport r = topology::matchTopologies(s, d, o);
    ASSERT_TRUE(r.matched);
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_NE(r.warnings[0].find("force-single-gpu-restore"), std::string::npos);
}

TEST(MatchRules, EmptySourceMatchesTrivially) {
    topology::Topology s = synth(0);
    EXPECT_TRUE(topology::matchTopologies(s, synth(2), {}).matched);
}

TEST(MatchRules, OptionsComeFromSettings) {
    settings::Settings st;
    st.checks.vramSize = false;
    st.exactGpuCount = true;
    st.forceSingleGpuRestore = true;
    st.deviceMap.push_back({1, 2, -1});
    topology::MatchOptions o = topology::matchOptionsFromSettings(st);
    EXPECT_FALSE(o.checks.vramSize);
    EXPECT_TRUE(o.checks.numa);
    EXPECT_TRUE(o.exactGpuCount);
    EXPECT_TRUE(o.forceSingleGpu);
    ASSERT_EQ(o.deviceMap.size(), 1u);
    EXPECT_FALSE(o.usableDstGpuIds.has_value());
}

TEST(MatchRules, MapGpusReturnsNoMappingErrorWithReasons) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    testsupport::setVram(gpuAt(d, 0), 1ull << 30);
    auto m = topology::mapGpus(s, d, {});
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.error().code(), base::ErrorCode::NoMapping);
    EXPECT_NE(m.error().message().find("KFD_VRAM_SIZE_CHECK=0"), std::string::npos);
    auto ok = topology::mapGpus(s, synth(1, 0, 1, 0x2000), {});
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok->size(), 1u);
}

TEST(MatchRules, EveryRuleOptionIsInTheOptionTableUnderTheNameMessagesUse) {
    std::vector<topology::MatchRuleOption> rules = topology::matchRuleOptions();
    EXPECT_EQ(rules.size(), 10u);
    for (const topology::MatchRuleOption& rule : rules) {
        const config::OptionSpec* spec = config::findOption(rule.option);
        ASSERT_NE(spec, nullptr) << rule.option;
        EXPECT_EQ(spec->envName, rule.env) << rule.option;
        EXPECT_EQ(spec->legacyEnv, rule.legacyEnv) << rule.option;
        // The option fills the flag the matcher reads.
        config::OptionTarget t;
        config::assignOption(*spec, t, config::TypedValue(false));
        EXPECT_FALSE(t.settings.checks.*rule.flag) << rule.option;
        settings::CompatibilityChecks others = t.settings.checks;
        others.*rule.flag = true;
        EXPECT_TRUE(others.numa && others.largeBar && others.xgmiLink && others.peerLink &&
                    others.capability && others.vramSize && others.numGws && others.cachesCount &&
                    others.fwVersion && others.sdmaFwVersion)
            << rule.option << " fills another flag too";
    }
}

} // namespace
