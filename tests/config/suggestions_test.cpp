#include "config/suggestions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace config {
namespace {

TEST(EditDistance, CountsEditsIgnoringCaseAndDashVersusUnderscore) {
    EXPECT_EQ(editDistance("numa-check", "numa-check"), 0u);
    EXPECT_EQ(editDistance("numa-check", "NUMA_CHECK"), 0u);
    EXPECT_EQ(editDistance("numa-chek", "numa-check"), 1u);
    EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
    EXPECT_EQ(editDistance("", "abc"), 3u);
}

TEST(NearestName, SuggestsTheClosestCandidate) {
    std::vector<std::string> names = {"numa-check", "num-gws-check", "mock-root"};
    EXPECT_EQ(nearestName("numa-chek", names), "numa-check");
    EXPECT_EQ(nearestName("mock_root", names), "mock-root");
}

TEST(NearestName, SuggestsNothingWhenNothingIsClose) {
    EXPECT_EQ(nearestName("completely-different", {"numa-check", "mock-root"}), "");
}

TEST(UnknownNameMessage, PointsToHelpWithoutACloseName) {
    EXPECT_THAT(unknownNameMessage("key", "zzz", {"numa_check"}),
                testing::HasSubstr("criu-amdgpu config help"));
}

} // namespace
} // namespace config
