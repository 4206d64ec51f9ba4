// The amdgpu-drm backend on the user-space driver (backends/amdgpu-drm/src/driver_kernel.h, option
// kfd-driver): on a machine of render nodes only (kfd-driver --no-kfd) its probe finds the
// machine's render nodes, one its /dev lacks left out, while the kfd backend finds no /dev/kfd;
// a root others may write is refused naming the option. (e2e.kfd_driver_render dumps and
// restores a process on it under real criu.)
#include "driver_kernel.h"
#include "driver_test_support.h"
#include "drm_backend.h"
#include "kfd/driver_kernel.h"
#include "kfd/kfd_backend.h"
#include "kfd/real_kernel.h"

#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

namespace {

using ::testing::HasSubstr;
using namespace kfddrivertest;

drm::DrmBackend drmBackendOfSettings() {
    return drm::DrmBackend([](const settings::Settings& s) { return drm::kernelFor(s); });
}

TEST(KfdDriverDrmBackend, OnAMachineWithoutKfdTheRenderNodeBackendIsPresentAndKfdIsNot) {
    testsupport::TempDir dir;
    Child driver({KFD_DRIVER_EXE, dir.path(), "--gpus", "2", "--hide-render", "128", "--no-kfd"},
                 {});
    int loop = -1;
    expectReady(driver, &loop);
    settings::Settings settings;
    settings.kfdDriver = dir.path();

    // The machine's /dev/dri: its GPUs' render nodes but the one its /dev lacks.
    auto kernel = drm::kernelFor(settings);
    ASSERT_TRUE(kernel.ok()) << kernel.error().describe();
    int err = 0;
    auto dri = kernel.value()->files().openDir("/dev/dri", &err);
    ASSERT_TRUE(dri) << err;
    EXPECT_EQ(dri->entryNames(&err), std::vector<std::string>{"renderD129"});

    drm::DrmBackend render = drmBackendOfSettings();
    hal::ProbeAnswer answer = render.probe(settings);
    EXPECT_TRUE(answer.present) << answer.reason;
    // renderD128 is not in the machine's /dev: the first render node is renderD129.
    EXPECT_EQ(answer.reason, "amdgpu render node /dev/dri/renderD129 answers GEM_LIST_HANDLES");
    EXPECT_EQ(answer.priority, drm::kBackendPriority);

    kfd::KfdBackend kfdBackend([](const settings::Settings& s) {
        return kfd::kernelFor(s, [] { return kfd::makeRealKernel(); });
    });
    hal::ProbeAnswer kfdAnswer = kfdBackend.probe(settings);
    EXPECT_FALSE(kfdAnswer.present);
    EXPECT_THAT(kfdAnswer.reason, HasSubstr("no /dev/kfd"));
    expectDriverEnds(driver, loop);
}

TEST(KfdDriverDrmBackend, ARootOthersMayWriteIsRefusedNamingTheOption) {
    testsupport::TempDir root;
    ASSERT_EQ(0, chmod(root.path().c_str(), 0777));
    settings::Settings settings;
    settings.kfdDriver = root.path();
    drm::DrmBackend render = drmBackendOfSettings();
    hal::ProbeAnswer answer = render.probe(settings);
    EXPECT_FALSE(answer.present);
    EXPECT_THAT(answer.reason, HasSubstr("kfd-driver '" + root.path() + "'"));
    EXPECT_THAT(answer.reason, HasSubstr("writable by group or others"));
}

} // namespace
