// Probing for render nodes and claiming files and mappings.
#include "amdgpu-drm/render_caps.h"
#include "drm_backend.h"
#include "drm_fixture.h"

#include <sys/sysmacros.h>

namespace fakedrm {
namespace {

drm::DrmBackend backendOn(FakeMachine& m) {
    drm::Paths p = m.paths;
    return drm::DrmBackend(m.kernel, [p](drm::Paths& paths) { paths = p; });
}

TEST(DrmProbe, NoRenderNodesIsNotPresentWithTheReason) {
    FakeMachine m;
    auto answer = backendOn(m).probe(m.settings);
    EXPECT_FALSE(answer.present);
    EXPECT_NE(answer.reason.find("no render node"), std::string::npos) << answer.reason;
}

TEST(DrmProbe, AmdgpuRenderNodeOnA618KernelIsPresentBelowKfd) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    auto backend = backendOn(m);
    EXPECT_STREQ(backend.name(), "amdgpu-drm");
    auto answer = backend.probe(m.settings);
    EXPECT_TRUE(answer.present) << answer.reason;
    EXPECT_EQ(answer.priority, 50);
    EXPECT_NE(std::find(answer.capabilities.begin(), answer.capabilities.end(),
                        hal::capability::kRenderNodeBos),
              answer.capabilities.end());
    EXPECT_EQ(m.kernel->openFds(), 0u);
}

TEST(DrmProbe, KernelWithoutListHandlesIsNotPresentBecauseOfIt) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    m.kernel->profile = KernelProfile::Before6_18;
    auto answer = backendOn(m).probe(m.settings);
    EXPECT_FALSE(answer.present);
    EXPECT_EQ(answer.reason, "the kernel lacks GEM_LIST_HANDLES (Linux 6.18+)");
}

TEST(DrmProbe, OtherDriversAreIgnored) {
    FakeMachine m;
    GpuSpec intel = gpuAt(128);
    intel.driver = "i915";
    m.addGpu(intel, "0000:00:02.0");
    auto answer = backendOn(m).probe(m.settings);
    EXPECT_FALSE(answer.present);
    EXPECT_NE(answer.reason.find("no amdgpu render node"), std::string::npos) << answer.reason;
}

TEST(DrmProbe, DriverFromDrmVersionWhenSysfsIsMissing) {
    FakeMachine m;
    GpuSpec intel = gpuAt(128);
    intel.driver = "i915";
    m.addGpu(intel, "0000:00:02.0", /*sysfs=*/false);
    m.addGpu(gpuAt(129), "0000:03:00.0", /*sysfs=*/false);
    auto answer = backendOn(m).probe(m.settings);
    EXPECT_TRUE(answer.present) << answer.reason;
    EXPECT_NE(answer.reason.find("renderD129"), std::string::npos);
}

TEST(DrmProbe, UnopenableNodeIsTheReason) {
    FakeMachine m;
    testsupport::writeFile(m.paths.devRoot + "/dri/renderD130", "");
    auto answer = backendOn(m).probe(m.settings);
    EXPECT_FALSE(answer.present);
    EXPECT_NE(answer.reason.find("renderD130"), std::string::npos) << answer.reason;
}

TEST(DrmProbe, ListHandlesFailingOtherwiseIsTheReason) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    m.kernel->failIoctl(drm::kIoctlGemListHandles, 1, EIO);
    auto answer = backendOn(m).probe(m.settings);
    EXPECT_FALSE(answer.present);
    EXPECT_NE(answer.reason.find("GEM_LIST_HANDLES failed"), std::string::npos) << answer.reason;
}

TEST(DrmProbe, CreatesADeviceNamedAfterTheBackend) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    auto backend = backendOn(m);
    auto dev = backend.createDevice(hal::DeviceEnv{&m.settings, nullptr});
    ASSERT_TRUE(dev.ok());
    EXPECT_EQ(dev.value()->backendName(), "amdgpu-drm");
    EXPECT_FALSE(backend.createDevice(hal::DeviceEnv{}).ok());
    auto noImages = dev.value()->ownsImage(1);
    EXPECT_FALSE(noImages.ok());
}

TEST(DrmProbe, PathsComeFromSettings) {
    settings::Settings s;
    s.devRoot = "/x/dev";
    s.kfdSysfsRoot = "/x/kfd";
    drm::Paths p = drm::Paths::fromSettings(s);
    EXPECT_EQ(p.renderNodePath(128), "/x/dev/dri/renderD128");
    EXPECT_EQ(p.kfdRoot(), "/x/kfd");
    EXPECT_EQ(drm::Paths::fromSettings(settings::Settings{}).kfdRoot(),
              "/sys/class/kfd/kfd/topology");
}

class DrmClaim : public ::testing::Test {
protected:
    void SetUp() override {
        m.addGpu(gpuAt(128), "0000:03:00.0");
        GpuSpec intel = gpuAt(129);
        intel.driver = "i915";
        m.addGpu(intel, "0000:00:02.0");
        dev = makeDevice(m, images);
    }
    /// What criu hands over: `fd`, with criu's own stat of it (`mode`, maj:min). The claim asks
    /// the device (KernelInterface::fstat), not criu's stat: the same answer on a real kernel,
    /// and a user-space driver's render nodes are block nodes (7:N) to the kernel.
    static hal::FileRef ref(int fd, mode_t mode = S_IFBLK | 0600, unsigned maj = 7,
                            unsigned min = 0) {
        hal::FileRef r;
        r.fd = fd;
        r.st.st_mode = mode;
        r.st.st_rdev = makedev(maj, min);
        return r;
    }
    bool claimed(const hal::FileRef& r) {
        auto mine = dev->claimFile(r);
        EXPECT_TRUE(mine.ok()) << mine.error().describe();
        return mine.ok() && mine.value();
    }
    FakeMachine m;
    Images images;
    std::unique_ptr<drm::DrmDevice> dev;
};

TEST_F(DrmClaim, AmdgpuRenderNodeFilesAreClaimedByWhatTheDeviceSaysOfThem) {
    int fd = m.kernel->open(m.paths.renderNodePath(128));
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(claimed(ref(fd))) << "criu's stat says block 7:0, the device renderD128";
    EXPECT_TRUE(claimed(ref(fd, S_IFCHR | 0666, 226, 128)));
}

TEST_F(DrmClaim, OtherDriversAndFilesTheDeviceDoesNotKnowAreNot) {
    int intel = m.kernel->open(m.paths.renderNodePath(129));
    ASSERT_GE(intel, 0);
    EXPECT_FALSE(claimed(ref(intel)));
    EXPECT_FALSE(claimed(ref(intel, S_IFCHR | 0666, 226, 129)));
    // An fd the device does not know, whatever criu's stat says of it.
    EXPECT_FALSE(claimed(ref(999, S_IFCHR | 0666, 226, 128)));
    EXPECT_FALSE(claimed(ref(999)));
}

TEST_F(DrmClaim, MappingsOfAmdgpuRenderNodesAreClaimedByWhatTheDeviceSaysOfThem) {
    hal::VmaRef vma;
    vma.fd = m.kernel->open(m.paths.renderNodePath(128));
    vma.st = ref(vma.fd).st;
    EXPECT_TRUE(dev->claimVma(vma).value());
    vma.fd = m.kernel->open(m.paths.renderNodePath(129));
    vma.st = ref(vma.fd, S_IFCHR | 0666, 226, 128).st;
    EXPECT_FALSE(dev->claimVma(vma).value());
}

// What `criu-amdgpu probe` reports per render node, on each kernel generation, asked on a file
// of its own: no fd and no BO are left behind.
struct CapsCase {
    KernelProfile profile;
    bool listHandles;
    bool mappingInfo;
    drm::ChangeHandleState changeHandle;
};

TEST(DrmRenderCaps, EachKernelGenerationIsReportedAsItAnswers) {
    for (CapsCase c :
         {CapsCase{KernelProfile::Linux7, true, true, drm::ChangeHandleState::Disabled},
          CapsCase{KernelProfile::Linux6_18, true, true, drm::ChangeHandleState::Runs},
          CapsCase{KernelProfile::Before6_18, false, false, drm::ChangeHandleState::Absent}}) {
        SCOPED_TRACE(static_cast<int>(c.profile));
        FakeMachine m;
        m.addGpu(gpuAt(128), "0000:03:00.0");
        m.kernel->profile = c.profile;
        auto caps = drm::probeRenderNodeCaps(*m.kernel, m.paths);
        ASSERT_EQ(caps.size(), 1u);
        EXPECT_EQ(caps[0].minor, 128u);
        EXPECT_EQ(caps[0].error, "");
        EXPECT_EQ(caps[0].listHandles, c.listHandles);
        EXPECT_EQ(caps[0].mappingInfo, c.mappingInfo);
        EXPECT_EQ(caps[0].changeHandle, c.changeHandle);
        EXPECT_EQ(caps[0].canDump(), c.listHandles);
        EXPECT_TRUE(caps[0].canRestore()) << "the restore needs no ioctl of 6.18";
        EXPECT_EQ(m.kernel->openFds(), 0u);
        EXPECT_EQ(m.kernel->ioctlCounts[DRM_IOCTL_AMDGPU_GEM_CREATE],
                  m.kernel->ioctlCounts[DRM_IOCTL_GEM_CLOSE])
            << "the BO made for the questions is closed";
    }
}

// The kernels where GEM_CHANGE_HANDLE runs look the handle up before anything else: a question
// on a handle the file does not hold is answered ENOENT there, whatever the ioctl can do. So
// every profile is asked on a handle its file holds, changed to itself (nothing moves).
TEST(DrmRenderCaps, ChangeHandleIsAskedOnAHandleTheFileHoldsChangedToItself) {
    for (KernelProfile profile :
         {KernelProfile::Linux7, KernelProfile::Linux6_18, KernelProfile::Before6_18}) {
        SCOPED_TRACE(static_cast<int>(profile));
        FakeMachine m;
        m.addGpu(gpuAt(128), "0000:03:00.0");
        m.kernel->profile = profile;
        auto caps = drm::probeRenderNodeCaps(*m.kernel, m.paths);
        ASSERT_EQ(caps.size(), 1u);
        EXPECT_EQ(caps[0].error, "");
        ASSERT_EQ(m.kernel->changeHandleCalls.size(), 1u);
        const FakeKernel::ChangeHandleCall& call = m.kernel->changeHandleCalls[0];
        EXPECT_TRUE(call.held) << "handle " << call.handle << " was not one of the file's";
        EXPECT_EQ(call.newHandle, call.handle);
    }
}

TEST(DrmRenderCaps, OtherDriversAreLeftOutAndAnUnopenableNodeSaysWhy) {
    FakeMachine m;
    GpuSpec intel = gpuAt(128);
    intel.driver = "i915";
    m.addGpu(intel, "0000:00:02.0");
    m.addGpu(gpuAt(129), "0000:03:00.0");
    m.kernel->denyRenderNode(129);
    auto caps = drm::probeRenderNodeCaps(*m.kernel, m.paths);
    ASSERT_EQ(caps.size(), 1u);
    EXPECT_EQ(caps[0].minor, 129u);
    EXPECT_NE(caps[0].error.find("Operation not permitted"), std::string::npos) << caps[0].error;
    EXPECT_FALSE(caps[0].canRestore());
}

TEST(DrmRenderCaps, AFailureOtherThanAMissingIoctlIsTheNodesError) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    m.kernel->failIoctl(drm::kIoctlGemChangeHandle, 1, EIO);
    auto caps = drm::probeRenderNodeCaps(*m.kernel, m.paths);
    ASSERT_EQ(caps.size(), 1u);
    EXPECT_NE(caps[0].error.find("GEM_CHANGE_HANDLE"), std::string::npos) << caps[0].error;
    EXPECT_FALSE(caps[0].listHandles);
}

TEST(DrmRenderCaps, AGetMappingInfoFailureIsTheNodesErrorAndTheBoIsClosed) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    m.kernel->profile = KernelProfile::Linux6_18;
    m.kernel->failIoctl(drm::kIoctlGemOp, 1, EIO);
    auto caps = drm::probeRenderNodeCaps(*m.kernel, m.paths);
    ASSERT_EQ(caps.size(), 1u);
    EXPECT_NE(caps[0].error.find("GET_MAPPING_INFO"), std::string::npos) << caps[0].error;
    EXPECT_TRUE(m.kernel->changeHandleCalls.empty()) << "nothing more is asked after a failure";
    EXPECT_EQ(m.kernel->ioctlCounts[DRM_IOCTL_AMDGPU_GEM_CREATE],
              m.kernel->ioctlCounts[DRM_IOCTL_GEM_CLOSE])
        << "the BO made for the questions is closed";
    EXPECT_EQ(m.kernel->openFds(), 0u);
}

} // namespace
} // namespace fakedrm
