// backend-dir names code that runs as root inside criu (issue 34, item 5): a directory or a library
// someone other than root (or the caller) owns or may write is refused, and its code never runs.
#include "loader_fixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class UntrustedBackendDir : public ::testing::Test {
protected:
    void SetUp() override {
        mark_ = marks_ / "loaded";
        setenv("LOADER_TEST_LOAD_MARK", mark_.c_str(), 1);
        dir_ = backends_ / "amdgpu";
        fs::create_directory(dir_);
        library_ = dir_ + "/marks_load.so";
        fs::copy_file(loadertest::builtModule("test_marks_load"), library_);
        chmod(library_.c_str(), 0755);
    }
    void TearDown() override { unsetenv("LOADER_TEST_LOAD_MARK"); }

    /// The candidates of discovering dir_, in a registry that is gone afterwards.
    std::deque<hal::BackendCandidate> discover() {
        hal::BackendRegistry registry;
        registry.discover(dir_, settings::Settings{}, hal::HostServices{});
        return registry.candidates();
    }
    bool codeRan() const { return fs::exists(mark_); }

    testsupport::TempDir marks_, backends_;
    std::string mark_, dir_, library_;
};

TEST_F(UntrustedBackendDir, GivenADirectoryOnlyItsOwnerWrites_WhenDiscovered_ThenItsLibraryRuns) {
    auto candidates = discover();

    ASSERT_EQ(candidates.size(), 1u);
    EXPECT_EQ(candidates[0].path, library_);
    EXPECT_THAT(candidates[0].skipReason, HasSubstr("not a backend"));
    EXPECT_TRUE(codeRan());
}

TEST_F(UntrustedBackendDir, GivenAWorldWritableDirectory_WhenDiscovered_ThenNothingInItRuns) {
    ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);

    auto candidates = discover();

    ASSERT_EQ(candidates.size(), 1u);
    EXPECT_EQ(candidates[0].path, dir_);
    EXPECT_FALSE(candidates[0].loaded);
    EXPECT_THAT(candidates[0].skipReason,
                HasSubstr("backend-dir '" + dir_ + "' is writable by group or others (mode 0777)"));
    EXPECT_FALSE(codeRan());
}

TEST_F(UntrustedBackendDir, GivenADirectoryInsideAGroupWritableOne_WhenDiscovered_ThenNothingRuns) {
    ASSERT_EQ(chmod(backends_.path().c_str(), 0775), 0);

    auto candidates = discover();

    ASSERT_EQ(candidates.size(), 1u);
    EXPECT_THAT(candidates[0].skipReason, HasSubstr("its directory '" + backends_.path() +
                                                    "' is writable by group or others"));
    EXPECT_FALSE(codeRan());
}

TEST_F(UntrustedBackendDir, GivenALibraryOthersMayWrite_WhenDiscovered_ThenItDoesNotRun) {
    ASSERT_EQ(chmod(library_.c_str(), 0666), 0);

    auto candidates = discover();

    ASSERT_EQ(candidates.size(), 1u);
    EXPECT_EQ(candidates[0].path, library_);
    EXPECT_THAT(candidates[0].skipReason,
                HasSubstr("'" + library_ + "' is writable by group or others (mode 0666)"));
    EXPECT_FALSE(codeRan());
}

TEST_F(UntrustedBackendDir, GivenADirectoryOwnedByNobody_WhenDiscovered_ThenNothingInItRuns) {
    if (geteuid() != 0)
        GTEST_SKIP() << "only root can give a directory to uid 65534";
    ASSERT_EQ(chown(dir_.c_str(), 65534, 65534), 0);

    auto candidates = discover();

    ASSERT_EQ(candidates.size(), 1u);
    EXPECT_THAT(candidates[0].skipReason,
                HasSubstr("backend-dir '" + dir_ + "' is owned by uid 65534"));
    EXPECT_FALSE(codeRan());
}

TEST_F(UntrustedBackendDir,
       GivenALinkToItInAWorldWritableDirectory_WhenDiscovered_ThenNothingRuns) {
    // The link points at a directory only its owner writes, but anyone may replace the link.
    std::string open = backends_ / "open";
    ASSERT_EQ(mkdir(open.c_str(), 0700), 0);
    ASSERT_EQ(chmod(open.c_str(), 0777), 0);
    std::string link = open + "/amdgpu";
    ASSERT_EQ(symlink(dir_.c_str(), link.c_str()), 0);

    hal::BackendRegistry registry;
    registry.discover(link, settings::Settings{}, hal::HostServices{});

    ASSERT_EQ(registry.candidates().size(), 1u);
    EXPECT_EQ(registry.candidates()[0].path, link);
    EXPECT_THAT(registry.candidates()[0].skipReason,
                HasSubstr("backend-dir '" + link + "': its directory '" + open +
                          "' is writable by group or others (mode 0777)"));
    EXPECT_FALSE(codeRan());
}

TEST_F(UntrustedBackendDir, GivenALibrarySwappedAfterItsCheck_WhenLoaded_ThenTheCheckedOneRuns) {
    auto checked = base::openTrustedPath(library_, "backend library", base::TrustedKind::File);
    ASSERT_TRUE(checked.ok()) << checked.error().describe();
    // Another library (a working backend, writable by anyone) takes the checked one's name.
    std::string other = dir_ + "/other";
    fs::copy_file(loadertest::builtModule("test_good"), other);
    ASSERT_EQ(chmod(other.c_str(), 0666), 0);
    ASSERT_EQ(rename(other.c_str(), library_.c_str()), 0);

    hal::BackendRegistry registry;
    registry.loadChecked(library_, *checked, settings::Settings{}, hal::HostServices{});

    ASSERT_EQ(registry.candidates().size(), 1u);
    EXPECT_EQ(registry.candidates()[0].path, library_);
    EXPECT_FALSE(registry.candidates()[0].loaded) << "the library swapped in was loaded";
    EXPECT_THAT(registry.candidates()[0].skipReason, HasSubstr("not a backend"));
    EXPECT_TRUE(codeRan());
}

TEST_F(UntrustedBackendDir, GivenALibraryThatCannotLoad_ThenTheReasonNamesItsPath) {
    std::string text = dir_ + "/text.so";
    testsupport::writeFile(text, "not an ELF file\n");
    ASSERT_EQ(chmod(text.c_str(), 0644), 0);

    auto candidates = discover();

    ASSERT_EQ(candidates.size(), 2u);
    EXPECT_EQ(candidates[1].path, text);
    EXPECT_THAT(candidates[1].skipReason, HasSubstr("cannot load: " + text));
    EXPECT_THAT(candidates[1].skipReason, ::testing::Not(HasSubstr("/proc/self/fd/")));
}

} // namespace

// The backends link the HAL's shared library (hal/src/hal_library.h), which a program with the HAL
// linked in (this test, the tool) does not have loaded: the registry loads it from core/ of the
// backend directory, judged as a backend is, before any backend.
class HalLibraryInBackendDir : public UntrustedBackendDir {
protected:
    void SetUp() override {
        UntrustedBackendDir::SetUp();
        backend_ = dir_ + "/mock.so";
        fs::copy_file(std::string(CRIU_AMDGPU_BUILD_BACKEND_DIR) + "/mock.so", backend_);
        fs::create_directory(dir_ + "/core");
        halLibrary_ = dir_ + "/core/libcriu-amdgpu-hal.so";
        fs::copy_file(std::string(CRIU_AMDGPU_BUILD_BACKEND_DIR) + "/core/libcriu-amdgpu-hal.so",
                      halLibrary_);
        chmod(backend_.c_str(), 0755);
        chmod(halLibrary_.c_str(), 0755);
    }
    /// Whether this process has the HAL's library loaded (by its SONAME, nothing opened).
    static bool halLibraryLoaded() {
        void* handle = dlopen("libcriu-amdgpu-hal.so", RTLD_LAZY | RTLD_NOLOAD);
        if (handle)
            dlclose(handle);
        return handle != nullptr;
    }
    const hal::BackendCandidate* mockCandidate(const std::deque<hal::BackendCandidate>& all) {
        for (const hal::BackendCandidate& c : all)
            if (c.path == backend_)
                return &c;
        return nullptr;
    }

    std::string backend_, halLibrary_;
};

TEST_F(HalLibraryInBackendDir, GivenItOnlyItsOwnerWrites_WhenDiscovered_ThenTheBackendLoads) {
    ASSERT_FALSE(halLibraryLoaded()) << "this test needs a process without the library";
    hal::BackendRegistry registry;
    registry.discover(dir_, settings::Settings{}, hal::HostServices{});

    const hal::BackendCandidate* mock = mockCandidate(registry.candidates());
    ASSERT_NE(mock, nullptr);
    EXPECT_TRUE(mock->loaded) << mock->skipReason;
    EXPECT_EQ(mock->name, "mock");
    EXPECT_TRUE(halLibraryLoaded());
}

TEST_F(HalLibraryInBackendDir,
       GivenItOthersMayWrite_WhenDiscovered_ThenItIsNotLoadedAndTheBackendSaysWhy) {
    ASSERT_EQ(chmod(halLibrary_.c_str(), 0666), 0);

    auto candidates = discover();

    const hal::BackendCandidate* mock = mockCandidate(candidates);
    ASSERT_NE(mock, nullptr);
    EXPECT_FALSE(mock->loaded);
    EXPECT_THAT(mock->skipReason, HasSubstr("libcriu-amdgpu-hal.so"));
    EXPECT_THAT(mock->skipReason, HasSubstr("HAL library '" + halLibrary_ +
                                            "' is writable by group or others (mode 0666)"));
    EXPECT_FALSE(halLibraryLoaded());
}
