// BackendRegistry::discover: which files become candidates, in which order, and what loads.
#include "loader_fixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace {

using loadertest::candidateFile;
using loadertest::ScenarioDir;
using ::testing::HasSubstr;

/// Every built test library, the garbage file, a directory named like a library and a text file.
class EverythingDir : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char* m :
             {"test_good", "test_better", "test_absent", "test_mock", "test_zz_duplicate",
              "test_newer_minor", "test_abi_major2", "test_no_entry", "test_null_descriptor",
              "test_incomplete_descriptor", "test_create_fails", "test_unresolved"})
            dir_.link(m);
        dir_.write("x.so", std::string(4096, '#'));
        std::filesystem::create_directory(dir_ / "dir.so");
        dir_.write("README.txt", "not a library");
        registry_.discover(dir_.path(), settings_, host_);
    }
    ScenarioDir dir_;
    settings::Settings settings_;
    hal::HostServices host_;
    hal::BackendRegistry registry_;
};

TEST_F(EverythingDir, GivenGoodAndBrokenFiles_WhenDiscovered_ThenEverySoFileIsACandidate) {
    EXPECT_EQ(registry_.candidates().size(), 14u);
    EXPECT_EQ(candidateFile(registry_, "README.txt"), nullptr);
}

TEST_F(EverythingDir, GivenGoodAndBrokenFiles_WhenDiscovered_ThenCandidatesAreInFileNameOrder) {
    std::vector<std::string> names;
    for (const auto& c : registry_.candidates())
        names.push_back(std::filesystem::path(c.path).filename());

    EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
    EXPECT_EQ(names.front(), "dir.so");
}

TEST_F(EverythingDir, GivenGoodAndBrokenFiles_WhenDiscovered_ThenExactlyTheGoodOnesAreLoaded) {
    std::vector<std::string> loaded;
    for (const auto& c : registry_.candidates())
        if (c.loaded)
            loaded.push_back(c.name);

    EXPECT_THAT(loaded, ::testing::ElementsAre("test-absent", "test-better", "test-good", "mock",
                                               "test-newer-minor"));
}

TEST_F(EverythingDir, GivenGoodAndBrokenFiles_WhenDiscovered_ThenEverySkippedOneHasAReason) {
    for (const auto& c : registry_.candidates()) {
        if (c.loaded) {
            EXPECT_TRUE(c.skipReason.empty()) << c.path;
            EXPECT_NE(c.backend, nullptr) << c.path;
        } else {
            EXPECT_FALSE(c.skipReason.empty()) << c.path;
            EXPECT_EQ(c.backend, nullptr) << c.path;
        }
    }
}

TEST_F(EverythingDir, GivenGoodAndBrokenFiles_WhenAutoSelected_ThenTheBestGoodOneWins) {
    auto r = registry_.select(settings_);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->name, "test-better");
}

TEST(Discover, GivenALoadedBackend_WhenProbed_ThenItsAnswerIsRecorded) {
    ScenarioDir dir{"test_good", "test_absent"};
    hal::BackendRegistry registry;

    registry.discover(dir.path(), settings::Settings{}, hal::HostServices{});

    const auto* good = candidateFile(registry, "test_good.so");
    ASSERT_NE(good, nullptr);
    EXPECT_TRUE(good->loaded);
    EXPECT_EQ(good->name, "test-good");
    EXPECT_TRUE(good->probe.present);
    EXPECT_EQ(good->probe.priority, 10);
    EXPECT_THAT(good->probe.capabilities,
                ::testing::ElementsAre(hal::capability::kDump, hal::capability::kRestore,
                                       hal::capability::kRenderNodeBos));
    const auto* absent = candidateFile(registry, "test_absent.so");
    ASSERT_NE(absent, nullptr);
    EXPECT_TRUE(absent->loaded);
    EXPECT_FALSE(absent->probe.present);
    EXPECT_EQ(absent->probe.reason, "no /dev/test-absent device node");
}

TEST(Discover, GivenAMissingDirectory_WhenDiscovered_ThenNoCandidatesAndNoCrash) {
    testsupport::TempDir tmp;
    hal::BackendRegistry registry;

    registry.discover(tmp / "does-not-exist", settings::Settings{}, hal::HostServices{});

    EXPECT_TRUE(registry.candidates().empty());
}

TEST(Discover, GivenAMissingDirectory_WhenSelected_ThenNotPresentSayingNoBackend) {
    testsupport::TempDir tmp;
    hal::BackendRegistry registry;
    registry.discover(tmp / "does-not-exist", settings::Settings{}, hal::HostServices{});

    auto r = registry.select(settings::Settings{});

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), base::ErrorCode::NotPresent);
    EXPECT_THAT(r.error().describe(), HasSubstr("no AMD GPU backend is present"));
}

TEST(Discover, GivenAnEmptyDirectory_WhenDiscovered_ThenNoCandidates) {
    ScenarioDir dir;
    hal::BackendRegistry registry;

    registry.discover(dir.path(), settings::Settings{}, hal::HostServices{});

    EXPECT_TRUE(registry.candidates().empty());
}

TEST(Discover, GivenTwoDirectories_WhenBothDiscovered_ThenCandidatesAccumulate) {
    ScenarioDir first{"test_good"};
    ScenarioDir second{"test_better"};
    hal::BackendRegistry registry;

    registry.discover(first.path(), settings::Settings{}, hal::HostServices{});
    registry.discover(second.path(), settings::Settings{}, hal::HostServices{});

    ASSERT_EQ(registry.candidates().size(), 2u);
    EXPECT_TRUE(registry.candidates()[0].loaded);
    EXPECT_TRUE(registry.candidates()[1].loaded);
}

TEST(Discover, GivenTheBuildDirectoryOfTestBackends_WhenLoadedByPath_ThenLoadFileAcceptsIt) {
    hal::BackendRegistry registry;

    registry.loadFile(loadertest::builtModule("test_good"), settings::Settings{},
                      hal::HostServices{});

    ASSERT_EQ(registry.candidates().size(), 1u);
    EXPECT_TRUE(registry.candidates()[0].loaded);
    EXPECT_EQ(registry.candidates()[0].name, "test-good");
}

TEST(DiscoverThroughFds, GivenOneLibraryUnderTwoNamesAndThenAnother_ThenEachFileLoadsAsItself) {
    // Each library is loaded through /proc/self/fd/N of its checked fd. The loader keeps every
    // name it was asked for: the second name of a.so's file outlives its fd, and c.so's fd may
    // get the same number: under the same name the loader would hand back a.so's backend.
    ScenarioDir dir;
    dir.link("test_good", "a.so");
    dir.link("test_good", "b.so");
    dir.link("test_better", "c.so");
    hal::BackendRegistry registry;
    registry.discover(dir.path(), settings::Settings{}, hal::HostServices{});

    const hal::BackendCandidate* c = candidateFile(registry, "c.so");
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(c->loaded) << c->skipReason;
    EXPECT_EQ(c->name, "test-better");
    const hal::BackendCandidate* b = candidateFile(registry, "b.so");
    ASSERT_NE(b, nullptr);
    EXPECT_THAT(b->skipReason, HasSubstr("already loaded"));
}

} // namespace
