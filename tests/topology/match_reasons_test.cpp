// What a user reads when no mapping exists.
#include "topology/match.h"
#include "topology_fixtures.h"

#include <gtest/gtest.h>

namespace {

using testsupport::gpuAt;
using testsupport::synth;

std::string only(const topology::MatchReport& r) {
    EXPECT_FALSE(r.matched);
    EXPECT_EQ(r.reasons.size(), 1u) << testsupport::reasonsText(r);
    return r.reasons.empty() ? "" : r.reasons[0];
}

TEST(MatchReasons, VramShortfallNamesGpuValuesAndOption) {
    topology::Topology s = synth(1, 0, 1, 0x1234), d = synth(2, 0, 1, 0x2000);
    testsupport::setVram(gpuAt(s, 0), 68719476736ull);
    testsupport::setVram(gpuAt(d, 0), 34359738368ull);
    testsupport::setVram(gpuAt(d, 1), 17179869184ull);
    EXPECT_EQ(only(topology::matchTopologies(s, d, {})),
              "source GPU 0x1234 (node 1): no destination GPU has enough VRAM (needs 68719476736 "
              "bytes, largest candidate has 34359738368; vram-size-check); setting "
              "vram-size-check=false (KFD_VRAM_SIZE_CHECK=0) would allow a mapping, at this cost: "
              "the destination GPU has less VRAM, so the restore fails if the job's buffers do not "
              "fit");
}

TEST(MatchReasons, FirmwareNamesTheOption) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    gpuAt(d, 0).set("fw_version", 50);
    std::string r = only(topology::matchTopologies(s, d, {}));
    EXPECT_NE(r.find("source GPU 0x1000 (node 1)"), std::string::npos) << r;
    EXPECT_NE(r.find("fw_version >= 92 (largest candidate has 50; fw-version-check)"),
              std::string::npos)
        << r;
    EXPECT_NE(r.find("setting fw-version-check=false (KFD_FW_VER_CHECK=0) would allow a mapping"),
              std::string::npos)
        << r;
}

TEST(MatchReasons, SdmaFirmwareCachesAndGwsNameTheirOptions) {
    struct Case {
        const char* key;
        const char* option;
    };
    for (Case c : {Case{"sdma_fw_version", "sdma-fw-version-check"},
                   Case{"caches_count", "caches-count-check"}, Case{"num_gws", "num-gws-check"},
                   Case{"capability", "capability-check"}}) {
        topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
        gpuAt(d, 0).set(c.key, 1);
        std::string r = only(topology::matchTopologies(s, d, {}));
        EXPECT_NE(r.find(c.option), std::string::npos) << r;
    }
}

TEST(MatchReasons, EqualPropertyNamesValuesAndSaysItCannotBeRelaxed) {
    topology::Topology s = synth(1), d = synth(1, 0, 1, 0x2000);
    gpuAt(d, 0).set("device_id", 0x74a1);
    EXPECT_EQ(only(topology::matchTopologies(s, d, {})),
              "source GPU 0x1000 (node 1): no destination GPU has device_id 29711 (candidates "
              "have 29857); device_id must be equal and cannot be relaxed");
}

TEST(MatchReasons, EveryBlockedSourceGpuGetsAReason) {
    topology::Topology s = synth(3), d = synth(3, 0, 1, 0x2000);
    for (size_t i = 0; i < 3; ++i)
        gpuAt(d, i).set("num_cp_queues", 8);
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    ASSERT_EQ(r.reasons.size(), 3u);
    EXPECT_NE(r.reasons[2].find("0x1222 (node 3)"), std::string::npos) << r.reasons[2];
}

TEST(MatchReasons, TooFewCandidatesForAGroupIsAHallViolation) {
    // Both source GPUs need 64 GiB; only one destination GPU has it.
    topology::Topology s = synth(2), d = synth(2, 0, 1, 0x2000);
    testsupport::setVram(gpuAt(d, 1), 32ull << 30);
    std::string r = only(topology::matchTopologies(s, d, {}));
    EXPECT_NE(r.find("source GPUs 0x1000 (node 1), 0x1111 (node 2) need 2 distinct destination "
                     "GPUs but only 1 pass"),
              std::string::npos)
        << r;
    EXPECT_NE(r.find("vram-size-check"), std::string::npos) << r;
}

TEST(MatchReasons, NumaReasonNamesTheGroupAndTheOption) {
    topology::Topology s = synth(2, 0, 1), d = synth(2, 0, 2, 0x2000);
    std::string r = only(topology::matchTopologies(s, d, {}));
    EXPECT_NE(r.find("source GPUs 0x1000 (node 1), 0x1111 (node 2) share CPU node 0"),
              std::string::npos)
        << r;
    EXPECT_NE(r.find("setting numa-check=false (KFD_NUMA_CHECK=0) would allow a mapping, at this "
                     "cost: GPUs may be attached to other CPU nodes"),
              std::string::npos)
        << r;
}

TEST(MatchReasons, AHiveLargerThanAnyDestinationHiveNeedsBothLinkRulesRelaxed) {
    // A hive of four onto two hives of two: no destination GPU has two-way links with three
    // others, of any type. Turning off xgmi-link-check alone still asks for two-way PCIe links,
    // peer-link-check alone still for XGMI ones: neither is offered alone.
    topology::Topology s = synth(4, 1), d = synth(4, 2, 1, 0x2000);
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    ASSERT_FALSE(r.matched);
    ASSERT_EQ(r.reasons.size(), 2u) << testsupport::reasonsText(r);
    EXPECT_NE(
        r.reasons[0].find("source GPU 0x1000 (node 1) has two-way XGMI links with 3 GPUs, "
                          "but no destination GPU that passes the other checks has as many "
                          "(the most is 1; a link is two-way when one of its type comes back; "
                          "peer-link-check, xgmi-link-check)"),
        std::string::npos)
        << testsupport::reasonsText(r);
    EXPECT_NE(r.reasons[0].find("peer-link-check governs this, but relaxing it alone would not be "
                                "enough"),
              std::string::npos)
        << testsupport::reasonsText(r);
    EXPECT_NE(r.reasons[0].find("xgmi-link-check governs this, but relaxing it alone would not be "
                                "enough"),
              std::string::npos)
        << testsupport::reasonsText(r);
    EXPECT_EQ(r.reasons[1].find("setting peer-link-check=false (CRIU_AMDGPU_PEER_LINK_CHECK=0) and "
                                "xgmi-link-check=false (CRIU_AMDGPU_XGMI_LINK_CHECK=0) together "
                                "would allow a mapping"),
              0u)
        << testsupport::reasonsText(r);
}

TEST(MatchReasons, XgmiHiveOntoPcieLinkedGpusNamesTheHiveAndTheXgmiOption) {
    // Two XGMI peers onto two GPUs linked two-way by PCIe: only the XGMI rule blocks.
    topology::Topology s = synth(2, 1), d = synth(2, 0, 1, 0x2000);
    testsupport::addLink(d, gpuAt(d, 0).index, gpuAt(d, 1).index, 2);
    testsupport::addLink(d, gpuAt(d, 1).index, gpuAt(d, 0).index, 2);
    std::string r = only(topology::matchTopologies(s, d, {}));
    EXPECT_NE(r.find("source GPU 0x1000 (node 1) and its XGMI peers 0x1111 (node 2) form a hive "
                     "of 2 GPUs"),
              std::string::npos)
        << r;
    EXPECT_NE(r.find("setting xgmi-link-check=false (CRIU_AMDGPU_XGMI_LINK_CHECK=0) would allow a "
                     "mapping, at this cost: XGMI links may become PCIe"),
              std::string::npos)
        << r;
    EXPECT_EQ(r.find("peer-link-check"), std::string::npos) << r;
}

TEST(MatchReasons, HivesThatFitAloneButNotTogether) {
    topology::Topology s = synth(4, 2), d = synth(4, 0, 1, 0x2000);
    testsupport::setHives(d, {{0, 1}, {2}, {3}});
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    ASSERT_FALSE(r.matched);
    EXPECT_NE(
        r.reasons[0].find("distinct destination GPUs with as many links as they have, but only "
                          "2 compatible destination GPUs have them (0x2000, 0x2111)"),
        std::string::npos)
        << testsupport::reasonsText(r);
}

TEST(MatchReasons, CountReasonListsSourceGpus) {
    std::string r = only(topology::matchTopologies(synth(3), synth(2, 0, 1, 0x2000), {}));
    EXPECT_NE(r.find("source GPUs 0x1000 (node 1)"), std::string::npos) << r;
    EXPECT_NE(r.find("used 3 GPUs but the destination has only 2 usable"), std::string::npos) << r;
}

} // namespace
