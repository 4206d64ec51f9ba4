// BackendRegistry::select: auto picks the best present backend (never the mock unless a mock
// root is configured); a configured order is honoured and falls through to the next present one;
// once one is chosen, the others can be unloaded.
#include "loader_fixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace {

using base::ErrorCode;
using loadertest::ScenarioDir;
using ::testing::HasSubstr;

class Select : public ::testing::Test {
protected:
    void discover(std::initializer_list<const char*> modules) {
        for (const char* m : modules)
            dir_.link(m);
        registry_.discover(dir_.path(), settings_, hal::HostServices{});
    }
    base::Result<hal::BackendCandidate*> select() { return registry_.select(settings_); }
    ScenarioDir dir_;
    settings::Settings settings_;
    hal::BackendRegistry registry_;
};

TEST_F(Select, GivenAutoAndTwoPresentBackends_WhenSelected_ThenTheHighestPriorityWins) {
    discover({"test_good", "test_better", "test_absent"});

    auto r = select();

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "test-better");
}

TEST_F(Select,
       GivenACheckpointAskingForACapability_WhenSelected_ThenALowerPriorityBackendWithItWins) {
    discover({"test_good", "test_better"});

    auto r = registry_.select(settings_, hal::capability::kRenderNodeBos);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "test-good");
}

TEST_F(Select, GivenACapabilityNoPresentBackendHas_WhenSelected_ThenPriorityDecides) {
    discover({"test_better"});

    auto r = registry_.select(settings_, hal::capability::kRenderNodeBos);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "test-better");
}

TEST_F(Select, GivenAConfiguredBackend_WhenACapabilityIsAskedFor_ThenTheConfigurationWins) {
    discover({"test_good", "test_better"});
    settings_.backends = {"test-better"};

    auto r = registry_.select(settings_, hal::capability::kRenderNodeBos);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "test-better");
}

TEST_F(Select, GivenTheWordAuto_WhenSelected_ThenItBehavesLikeNoSetting) {
    discover({"test_good", "test_better"});
    settings_.backends = {"auto"};

    auto r = select();

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "test-better");
}

TEST_F(Select, GivenAutoAndOnlyAnAbsentBackend_WhenSelected_ThenNotPresent) {
    discover({"test_absent"});

    auto r = select();

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NotPresent);
    EXPECT_THAT(r.error().describe(), HasSubstr("no AMD GPU backend is present"));
}

TEST_F(Select, GivenALowerPriorityBackendConfigured_WhenSelected_ThenItIsChosen) {
    discover({"test_good", "test_better"});
    settings_.backends = {"test-good"};

    auto r = select();

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "test-good");
}

TEST_F(Select, GivenANotPresentBackendConfigured_WhenSelected_ThenNotPresentWithItsProbeReason) {
    discover({"test_good", "test_absent"});
    settings_.backends = {"test-absent"};

    auto r = select();

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NotPresent);
    EXPECT_THAT(r.error().describe(), HasSubstr("test-absent"));
    EXPECT_THAT(r.error().describe(), HasSubstr("no /dev/test-absent device node"));
}

TEST_F(Select, GivenAnUnknownBackendConfigured_WhenSelected_ThenTheErrorSaysItWasNotFound) {
    discover({"test_good"});
    settings_.backends = {"nope"};

    auto r = select();

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NotPresent);
    EXPECT_THAT(r.error().describe(),
                HasSubstr("backend 'nope' was not found among the loaded backends"));
}

TEST_F(Select, GivenABackendThatFailedToLoadConfigured_WhenSelected_ThenNotFound) {
    discover({"test_abi_major2", "test_good"});
    settings_.backends = {"test-abi2"};

    auto r = select();

    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("backend 'test-abi2' was not found"));
}

TEST_F(Select, GivenAnOrderWhoseFirstIsAbsent_WhenSelected_ThenTheNextPresentOneIsChosen) {
    discover({"test_good", "test_better", "test_absent"});
    settings_.backends = {"test-absent", "nope", "test-good", "test-better"};

    auto r = select();

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "test-good");
}

TEST_F(Select, GivenAnOrderWithNothingUsable_WhenSelected_ThenEveryNameIsExplained) {
    discover({"test_absent"});
    settings_.backends = {"test-absent", "nope"};

    auto r = select();

    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("no /dev/test-absent device node"));
    EXPECT_THAT(r.error().describe(), HasSubstr("'nope' was not found"));
}

TEST_F(Select, GivenAutoAndAPresentMockWithTheTopPriority_WhenSelected_ThenTheMockIsNotChosen) {
    discover({"test_good", "test_mock"});

    auto r = select();

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "test-good");
}

TEST_F(Select, GivenAutoAndOnlyTheMock_WhenSelected_ThenNotPresent) {
    discover({"test_mock"});

    auto r = select();

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NotPresent);
}

TEST_F(Select, GivenAutoAndAMockRoot_WhenSelected_ThenTheMockIsChosen) {
    settings_.mockRoot = "/tmp/mock-gpu-root";
    discover({"test_good", "test_better", "test_mock"});

    auto r = select();

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "mock");
}

TEST_F(Select, GivenAMockRootButNoMockLibrary_WhenSelected_ThenNotPresentNamingTheRoot) {
    settings_.mockRoot = "/tmp/mock-gpu-root";
    discover({"test_good"});

    auto r = select();

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NotPresent);
    EXPECT_THAT(r.error().describe(), HasSubstr("/tmp/mock-gpu-root"));
    EXPECT_THAT(r.error().describe(), HasSubstr("no mock backend"));
}

TEST_F(Select, GivenTheMockConfiguredByName_WhenSelected_ThenItIsChosenWithoutAMockRoot) {
    discover({"test_good", "test_mock"});
    settings_.backends = {"mock"};

    auto r = select();

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "mock");
}

TEST_F(Select, GivenASelectedBackend_WhenUsed_ThenItIsTheLiveObjectOfTheLibrary) {
    discover({"test_good"});

    auto r = select();

    ASSERT_TRUE(r.ok());
    ASSERT_NE((*r)->backend, nullptr);
    EXPECT_STREQ((*r)->backend->name(), "test-good");
    auto device = (*r)->backend->createDevice(hal::DeviceEnv{&settings_, nullptr});
    ASSERT_FALSE(device.ok());
    EXPECT_EQ(device.error().code(), ErrorCode::NotSupported);
}

} // namespace

namespace {

using loadertest::isLoaded;

TEST_F(Select, GivenAChosenBackend_WhenTheOthersAreUnloaded_ThenOnlyItsLibraryStaysLoaded) {
    discover({"test_good", "test_better", "test_absent"});
    auto r = select();
    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_TRUE(isLoaded(dir_ / "test_good.so")) << "loaded by discover, before the unload";

    registry_.unloadAllBut(*r);

    EXPECT_TRUE(isLoaded(dir_ / "test_better.so"));
    EXPECT_FALSE(isLoaded(dir_ / "test_good.so"));
    EXPECT_FALSE(isLoaded(dir_ / "test_absent.so"));
    ASSERT_NE((*r)->backend, nullptr);
    EXPECT_STREQ((*r)->backend->name(), "test-better") << "the chosen backend still works";
    const hal::BackendCandidate* good = loadertest::candidateFile(registry_, "test_good.so");
    ASSERT_NE(good, nullptr);
    EXPECT_FALSE(good->loaded);
    EXPECT_EQ(good->backend, nullptr);
    EXPECT_EQ(good->probe.present, true) << "its probe answer stays";
    EXPECT_THAT(good->skipReason, HasSubstr("unloaded once backend 'test-better' was chosen"));
}

} // namespace
