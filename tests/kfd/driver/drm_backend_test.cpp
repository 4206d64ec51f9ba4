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
#include "sdma/engine.h"
#include "uapi.h"

#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace {

using ::testing::HasSubstr;
using namespace kfddrivertest;

drm::DrmBackend drmBackendOfSettings() {
    return drm::DrmBackend([](const settings::Settings& s) { return drm::kernelFor(s); });
}

/// A driver of render nodes only (--no-kfd, and `args`) on a root of its own, and the settings
/// that name it; end() checks it ends cleanly.
class RenderOnlyDriver {
public:
    explicit RenderOnlyDriver(std::vector<std::string> args) : driver_(command(args), {}) {
        expectReady(driver_, &loop_);
        settings.kfdDriver = dir_.path();
    }
    void end() { expectDriverEnds(driver_, loop_); }
    settings::Settings settings;

private:
    std::vector<std::string> command(std::vector<std::string> args) const {
        args.insert(args.begin(), {KFD_DRIVER_EXE, dir_.path()});
        args.push_back("--no-kfd");
        return args;
    }
    testsupport::TempDir dir_;
    Child driver_;
    int loop_ = -1;
};

TEST(KfdDriverDrmBackend, OnAMachineWithoutKfdTheRenderNodeBackendIsPresentAndKfdIsNot) {
    RenderOnlyDriver driver({"--gpus", "2", "--hide-render", "128"});
    const settings::Settings& settings = driver.settings;

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
    driver.end();
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

// A VRAM BO made NO_CPU_ACCESS without VM_ALWAYS_VALID may be exported (amdgpu_gem_prime_export)
// but not mapped by the CPU, through its dma-buf either: the backend copies its contents by
// SDMA on a render fd of its own through the dma-buf (bo_contents.h), which the driver's engine
// runs on the BO's memory, both ways.
TEST(KfdDriverDrmBackend, TheEngineCopiesANoCpuAccessVramBoThroughItsDmabufBothWays) {
    RenderOnlyDriver driver({});
    auto kernel = drm::kernelFor(driver.settings);
    ASSERT_TRUE(kernel.ok()) << kernel.error().describe();
    drm::KernelInterface& k = *kernel.value();
    int fd = k.open("/dev/dri/renderD128");
    ASSERT_GE(fd, 0);
    constexpr uint64_t kBytes = 64 << 10;
    drm_amdgpu_gem_create create{};
    create.in.bo_size = kBytes;
    create.in.domains = AMDGPU_GEM_DOMAIN_VRAM;
    create.in.domain_flags = AMDGPU_GEM_CREATE_NO_CPU_ACCESS;
    ASSERT_EQ(0, k.ioctl(fd, DRM_IOCTL_AMDGPU_GEM_CREATE, &create));
    drm_prime_handle prime{};
    prime.handle = create.out.handle;
    prime.flags = DRM_CLOEXEC | DRM_RDWR;
    ASSERT_EQ(0, k.ioctl(fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &prime));
    int err = 0;
    EXPECT_EQ(nullptr, k.mmap(prime.fd, 0, kBytes, PROT_READ, &err))
        << "the CPU mapped a NO_CPU_ACCESS BO through its dma-buf";
    EXPECT_EQ(EPERM, err);

    sdma::EngineOptions options{"/dev/dri/renderD128", "renderD128", 1};
    auto engine = sdma::Engine::open(k.libdrm(), options, kBytes);
    ASSERT_TRUE(engine.ok()) << engine.error().describe();
    auto bo = engine.value()->importBo(prime.fd, kBytes);
    ASSERT_TRUE(bo.ok()) << bo.error().describe();
    std::span<std::byte> slot = engine.value()->slot(0);
    for (uint64_t i = 0; i < kBytes; ++i)
        slot[i] = std::byte(i * 13 + 1);
    ASSERT_TRUE(engine.value()->copy(sdma::Direction::HostToBo, *bo.value(), 0, 0, kBytes).ok());
    std::fill(slot.begin(), slot.begin() + kBytes, std::byte{0});
    auto back = engine.value()->copy(sdma::Direction::BoToHost, *bo.value(), 0, 0, kBytes);
    ASSERT_TRUE(back.ok()) << back.error().describe();
    uint64_t same = 0;
    for (uint64_t i = 0; i < kBytes; ++i)
        same += slot[i] == std::byte(i * 13 + 1);
    EXPECT_EQ(kBytes, same) << "the BO's bytes did not come back";
    engine.value()->release(std::move(bo.value()));
    engine.value().reset();
    close(prime.fd);
    k.close(fd);
    driver.end();
}

} // namespace
