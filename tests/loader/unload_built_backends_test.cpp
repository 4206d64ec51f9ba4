// The backends of the build, loaded from its backend directory as the plugin loads them: once one
// is chosen, the others leave the process (their code and data are criu's memory otherwise). A
// module that defined one of GCC's STB_GNU_UNIQUE objects first stayed loaded for good.
#include "loader_fixture.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using loadertest::isLoaded;

const std::string kBackendDir = CRIU_AMDGPU_BUILD_BACKEND_DIR;

TEST(UnloadBuiltBackends, GivenEveryBackendLoaded_WhenAllButMockAreUnloaded_ThenTheOthersLeave) {
    hal::BackendRegistry registry;
    registry.discover(kBackendDir, settings::Settings{}, hal::HostServices{});
    const hal::BackendCandidate* mock = nullptr;
    for (const hal::BackendCandidate& c : registry.candidates()) {
        EXPECT_TRUE(c.loaded) << c.path << ": " << c.skipReason;
        if (c.name == "mock")
            mock = &c;
    }
    ASSERT_NE(mock, nullptr);
    ASSERT_TRUE(isLoaded(kBackendDir + "/kfd.so"));
    ASSERT_TRUE(isLoaded(kBackendDir + "/amdgpu-drm.so"));

    registry.unloadAllBut(mock);

    EXPECT_FALSE(isLoaded(kBackendDir + "/kfd.so"));
    EXPECT_FALSE(isLoaded(kBackendDir + "/amdgpu-drm.so"));
    EXPECT_TRUE(isLoaded(kBackendDir + "/mock.so"));
    ASSERT_NE(mock->backend, nullptr);
    EXPECT_STREQ(mock->backend->name(), "mock") << "the one kept still works";
}

} // namespace
