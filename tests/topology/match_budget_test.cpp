// The search budget: a crafted topology cannot hold a restore, a spent budget is said plainly
// and never taken for "no mapping", and explaining a failure has its own budget.
#include "topology/match.h"
#include "topology_fixtures.h"

#include <gtest/gtest.h>

namespace {

using testsupport::gpuAt;
using testsupport::synth;

TEST(MatchBudget, ACraftedTopologyIsStoppedWithAClearError) {
    // Unbounded, this search was still busy after 5 minutes; the budget stops it.
    topology::Topology s, d;
    testsupport::craftedSearchTrap(&s, &d);
    topology::MatchReport r = topology::matchTopologies(s, d, {});
    EXPECT_FALSE(r.matched);
    EXPECT_TRUE(r.budgetExhausted);
    EXPECT_EQ(r.searchSteps, topology::kDefaultSearchBudget);
    ASSERT_EQ(r.reasons.size(), 1u) << testsupport::reasonsText(r);
    EXPECT_NE(r.reasons[0].find("gave up after 4000000 search steps without deciding whether a "
                                "mapping exists"),
              std::string::npos)
        << testsupport::reasonsText(r);
    EXPECT_NE(r.reasons[0].find("device-map (CRIU_AMDGPU_DEVICE_MAP)"), std::string::npos)
        << testsupport::reasonsText(r);
    auto mapped = topology::mapGpus(s, d, {});
    ASSERT_FALSE(mapped.ok());
    EXPECT_NE(mapped.error().message().find("gave up"), std::string::npos);
}

TEST(MatchBudget, ASpentBudgetIsNeverTakenForNoMapping) {
    // 64 partitions map in under 1,000 steps; with 50 the search must say it gave up.
    topology::Topology t = synth(64, 1, 2);
    topology::MatchOptions o;
    o.searchBudget = 50;
    topology::MatchReport r = topology::matchTopologies(t, t, o);
    EXPECT_FALSE(r.matched);
    EXPECT_TRUE(r.budgetExhausted);
    ASSERT_EQ(r.reasons.size(), 1u) << testsupport::reasonsText(r);
    EXPECT_NE(r.reasons[0].find("gave up after 50 search steps"), std::string::npos)
        << testsupport::reasonsText(r);
    o.searchBudget = 100000;
    topology::MatchReport enough = topology::matchTopologies(t, t, o);
    EXPECT_TRUE(enough.matched);
    EXPECT_LT(enough.searchSteps, 1000u);
}

TEST(MatchBudget, ExplainingAFailureHasItsOwnBudget) {
    // The search proves there is no mapping within its budget; explaining why needs more than
    // that, and says so without taking back the answer.
    topology::Topology s = synth(64, 16), d = synth(64, 16, 1, 0x9000);
    testsupport::removeLink(d, gpuAt(d, 60).index, gpuAt(d, 61).index);
    topology::MatchReport first = topology::matchTopologies(s, d, {});
    ASSERT_FALSE(first.matched);
    ASSERT_FALSE(first.budgetExhausted);
    topology::MatchOptions o;
    o.searchBudget = first.searchSteps;
    topology::MatchReport r = topology::matchTopologies(s, d, o);
    EXPECT_FALSE(r.matched);
    EXPECT_FALSE(r.budgetExhausted) << "the search itself finished";
    ASSERT_FALSE(r.reasons.empty());
    EXPECT_NE(r.reasons.back().find("no mapping exists under the rules in force, but finding out "
                                    "which rules block it ran out of its"),
              std::string::npos)
        << testsupport::reasonsText(r);
}

TEST(MatchBudget, TooManyGpusAreRefusedUpFront) {
    topology::Topology big = synth(static_cast<unsigned>(topology::kMaxMatchGpus) + 1);
    topology::MatchReport r = topology::matchTopologies(big, synth(2), {});
    EXPECT_FALSE(r.matched);
    ASSERT_EQ(r.reasons.size(), 1u);
    EXPECT_NE(r.reasons[0].find("has 513 GPUs; the matcher handles at most 512"), std::string::npos)
        << r.reasons[0];
}

} // namespace
