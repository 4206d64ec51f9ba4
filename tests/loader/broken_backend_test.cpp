// Every way a backend file can be broken is a skipped candidate with a specific reason.
#include "loader_fixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace {

using loadertest::candidateFile;
using loadertest::ScenarioDir;
using ::testing::HasSubstr;
using ::testing::StartsWith;

/// Discovers a directory holding only `setup`'s files and returns the one candidate.
class BrokenBackend : public ::testing::Test {
protected:
    const hal::BackendCandidate& only() {
        registry_.discover(dir_.path(), settings::Settings{}, hal::HostServices{});
        EXPECT_EQ(registry_.candidates().size(), 1u);
        static const hal::BackendCandidate kNone;
        return registry_.candidates().empty() ? kNone : registry_.candidates().front();
    }
    ScenarioDir dir_;
    hal::BackendRegistry registry_;
};

TEST_F(BrokenBackend, GivenAFileThatIsNotAnElf_WhenDiscovered_ThenSkippedAsInvalidElf) {
    dir_.write("x.so", std::string(4096, '#'));

    const auto& c = only();

    EXPECT_FALSE(c.loaded);
    EXPECT_THAT(c.skipReason, StartsWith("cannot load: "));
    EXPECT_THAT(c.skipReason, HasSubstr("invalid ELF header"));
    EXPECT_THAT(c.skipReason, HasSubstr("x.so"));
}

TEST_F(BrokenBackend, GivenAnEmptyFile_WhenDiscovered_ThenSkippedAsTooShort) {
    dir_.write("empty.so", "");

    const auto& c = only();

    EXPECT_FALSE(c.loaded);
    EXPECT_THAT(c.skipReason, StartsWith("cannot load: "));
    EXPECT_THAT(c.skipReason, HasSubstr("file too short"));
}

TEST_F(BrokenBackend, GivenADirectoryNamedLikeALibrary_WhenDiscovered_ThenSkippedAsUnloadable) {
    std::filesystem::create_directory(dir_ / "dir.so");

    const auto& c = only();

    EXPECT_FALSE(c.loaded);
    EXPECT_THAT(c.skipReason, HasSubstr("dir.so' is not a regular file"));
}

TEST_F(BrokenBackend, GivenALibraryWithAnUndefinedDataSymbol_WhenDiscovered_ThenSkippedNamingIt) {
    dir_.link("test_unresolved");

    const auto& c = only();

    EXPECT_FALSE(c.loaded);
    EXPECT_THAT(c.skipReason, StartsWith("cannot load: "));
    EXPECT_THAT(c.skipReason, HasSubstr("undefined symbol: criu_amdgpu_test_missing_variable"));
}

TEST_F(BrokenBackend, GivenALibraryWithoutTheEntryPoint_WhenDiscovered_ThenSkippedAsNotABackend) {
    dir_.link("test_no_entry");

    const auto& c = only();

    EXPECT_FALSE(c.loaded);
    EXPECT_EQ(c.skipReason, "not a backend: no criu_amdgpu_backend_entry entry point");
    EXPECT_EQ(c.name, "");
}

TEST_F(BrokenBackend, GivenAnotherAbiMajor_WhenDiscovered_ThenSkippedNamingBothVersions) {
    dir_.link("test_abi_major2");

    const auto& c = only();

    EXPECT_FALSE(c.loaded);
    EXPECT_EQ(c.skipReason, "backend ABI 2.0, this plugin needs 1.0 or a later minor");
    EXPECT_EQ(c.backend, nullptr);
}

TEST_F(BrokenBackend, GivenALaterAbiMinor_WhenDiscovered_ThenItIsAccepted) {
    dir_.link("test_newer_minor");

    const auto& c = only();

    EXPECT_TRUE(c.loaded) << c.skipReason;
    EXPECT_EQ(c.name, "test-newer-minor");
    EXPECT_TRUE(c.probe.present);
}

TEST_F(BrokenBackend, GivenAnEntryPointReturningNull_WhenDiscovered_ThenSkippedAsNoDescriptor) {
    dir_.link("test_null_descriptor");

    const auto& c = only();

    EXPECT_FALSE(c.loaded);
    EXPECT_EQ(c.skipReason, "its entry point returned no descriptor");
}

TEST_F(BrokenBackend, GivenADescriptorWithoutFunctions_WhenDiscovered_ThenSkippedAsIncomplete) {
    dir_.link("test_incomplete_descriptor");

    const auto& c = only();

    EXPECT_FALSE(c.loaded);
    EXPECT_EQ(c.skipReason, "its descriptor is incomplete");
}

TEST_F(BrokenBackend, GivenACreateFunctionReturningNull_WhenDiscovered_ThenSkippedAsCreateFailed) {
    dir_.link("test_create_fails");

    const auto& c = only();

    EXPECT_FALSE(c.loaded);
    EXPECT_EQ(c.skipReason, "its create function failed");
}

TEST(DuplicateBackend,
     GivenTwoLibrariesWithOneName_WhenDiscovered_ThenTheSecondIsSkippedNamingTheFirst) {
    ScenarioDir dir{"test_good", "test_zz_duplicate"};
    hal::BackendRegistry registry;

    registry.discover(dir.path(), settings::Settings{}, hal::HostServices{});

    const auto* first = candidateFile(registry, "test_good.so");
    const auto* second = candidateFile(registry, "test_zz_duplicate.so");
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    EXPECT_TRUE(first->loaded);
    EXPECT_FALSE(second->loaded);
    EXPECT_EQ(second->skipReason,
              "a backend named 'test-good' was already loaded from " + (dir / "test_good.so"));
}

TEST(DuplicateBackend,
     GivenTwoLibrariesWithOneName_WhenSelectedByName_ThenTheFirstLoadedOneIsUsed) {
    ScenarioDir dir{"test_good", "test_zz_duplicate"};
    hal::BackendRegistry registry;
    registry.discover(dir.path(), settings::Settings{}, hal::HostServices{});
    settings::Settings settings;
    settings.backends = {"test-good"};

    auto r = registry.select(settings);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ((*r)->path, dir / "test_good.so");
    EXPECT_EQ((*r)->probe.priority, 10);
}

TEST(MissingFile, GivenAPathThatDoesNotExist_WhenLoadFile_ThenSkippedAsUnloadable) {
    testsupport::TempDir tmp;
    hal::BackendRegistry registry;

    registry.loadFile(tmp / "nothing.so", settings::Settings{}, hal::HostServices{});

    ASSERT_EQ(registry.candidates().size(), 1u);
    EXPECT_FALSE(registry.candidates()[0].loaded);
    EXPECT_THAT(registry.candidates()[0].skipReason, HasSubstr("nothing.so' cannot be resolved"));
    EXPECT_THAT(registry.candidates()[0].skipReason, HasSubstr("No such file"));
}

} // namespace
