// The fake render node itself behaves as the kernel does where the backend relies on it.
#include "drm_fixture.h"
#include "uapi.h"

#include <cerrno>

namespace fakedrm {
namespace {

class FakeSemantics : public ::testing::Test {
protected:
    void SetUp() override {
        m.addGpu(gpuAt(128), "0000:03:00.0");
        f = m.open(1, 3, 128);
    }
    FakeMachine m;
    AppFile f;
};

int changeHandle(FakeMachine& m, const AppFile& f, uint32_t handle, uint32_t newHandle) {
    drm::GemChangeHandle c;
    c.handle = handle;
    c.newHandle = newHandle;
    return m.kernel->ioctl(f.fd, drm::kIoctlGemChangeHandle, &c);
}

TEST_F(FakeSemantics, EveryTestRunsOnTheSeven_xProfileUnlessItSaysOtherwise) {
    EXPECT_EQ(m.kernel->profile, KernelProfile::Linux7);
}

// 6.18.0 to 6.18.35: drm_gem_change_handle_ioctl before attempt 4 disabled it.
TEST_F(FakeSemantics, ChangeHandleOn6_18LooksTheHandleUpFirstMovesItAndRefusesOneInUse) {
    m.kernel->profile = KernelProfile::Linux6_18;
    uint32_t a = m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    uint32_t b = m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 2);
    EXPECT_EQ(changeHandle(m, f, 99, 99), -ENOENT) << "the lookup comes before handle == new";
    EXPECT_EQ(changeHandle(m, f, a, a), 0) << "a held handle to itself: nothing changes";
    EXPECT_EQ(changeHandle(m, f, a, 0x80000000u), -EINVAL) << "above INT_MAX, before the lookup";
    EXPECT_EQ(changeHandle(m, f, 99, 0x80000000u), -EINVAL);
    EXPECT_EQ(changeHandle(m, f, 99, 7), -ENOENT);
    EXPECT_EQ(changeHandle(m, f, a, b), -ENOSPC);
    EXPECT_EQ(changeHandle(m, f, a, 0), -ENOSPC) << "below the idr base of 1";
    EXPECT_EQ(changeHandle(m, f, a, 77), 0);
    EXPECT_TRUE(m.kernel->fileOf(f.fd)->handles.count(77));
    EXPECT_EQ(m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 3), a) << "lowest free handle";
}

// 7.x, 6.18.36+, 7.0.13+: drm_invalid_op; before 6.18: an ioctl the kernel does not know.
TEST_F(FakeSemantics, ChangeHandleIsEinvalOnSeven_xAndBefore6_18) {
    uint32_t a = m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    for (KernelProfile p : {KernelProfile::Linux7, KernelProfile::Before6_18}) {
        m.kernel->profile = p;
        EXPECT_EQ(changeHandle(m, f, a, a), -EINVAL);
        EXPECT_EQ(changeHandle(m, f, a, 77), -EINVAL);
        EXPECT_EQ(m.kernel->fileOf(f.fd)->handles.count(77), 0u);
    }
}

TEST_F(FakeSemantics, ImportsTakeTheLowestFreeHandleLikeCreates) {
    AppFile g = m.open(1, 4, 128);
    uint32_t a = m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    for (int i = 0; i < 3; ++i)
        m.createBo(g, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 2);
    ASSERT_EQ(m.closeBo(g, 2), 0);
    EXPECT_EQ(m.share(f, a, g), 2u);
    EXPECT_EQ(m.createBo(g, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 3), 4u);
}

TEST_F(FakeSemantics, GetMappingInfoLooksTheHandleUpFirstAndIsEinvalBefore6_18) {
    uint32_t a = m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    drm::GemOp op;
    op.op = drm::kGemOpGetMappingInfo;
    op.handle = 99;
    EXPECT_EQ(m.kernel->ioctl(f.fd, drm::kIoctlGemOp, &op), -ENOENT);
    op.handle = a;
    EXPECT_EQ(m.kernel->ioctl(f.fd, drm::kIoctlGemOp, &op), 0);
    m.kernel->profile = KernelProfile::Before6_18;
    EXPECT_EQ(m.kernel->ioctl(f.fd, drm::kIoctlGemOp, &op), -EINVAL);
    op.handle = 99;
    EXPECT_EQ(m.kernel->ioctl(f.fd, drm::kIoctlGemOp, &op), -ENOENT);
}

// GEM_WAIT_IDLE as amdgpu_gem_wait_idle_ioctl answers it: absolute CLOCK_MONOTONIC deadline,
// status 1 when the deadline passes first, ENOENT for an unknown handle.
TEST_F(FakeSemantics, WaitIdleTakesAnAbsoluteDeadlineAndReportsBusyWhenItPasses) {
    uint32_t a = m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    drm_amdgpu_gem_wait_idle w{};
    w.in.handle = a;
    w.in.timeout = 0;
    ASSERT_EQ(m.kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE, &w), 0);
    EXPECT_EQ(w.out.status, 0u) << "an idle BO";
    m.kernel->submitWork(f.fd, a, 5000, std::vector<std::byte>(4096, std::byte{0x5a}));
    uint64_t start = m.kernel->monotonicNs();
    w = {};
    w.in.handle = a;
    w.in.timeout = start + 1000; // the deadline comes before the work is done
    ASSERT_EQ(m.kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE, &w), 0);
    EXPECT_EQ(w.out.status, 1u);
    EXPECT_EQ(m.kernel->monotonicNs(), start + 1000) << "waited until the deadline";
    EXPECT_NE(m.contents(f.fd, a)[0], std::byte{0x5a});
    w = {};
    w.in.handle = a;
    w.in.timeout = ~0ull; // negative as int64: no limit
    ASSERT_EQ(m.kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE, &w), 0);
    EXPECT_EQ(w.out.status, 0u);
    EXPECT_EQ(m.kernel->monotonicNs(), start + 5000) << "waited until the work was done";
    EXPECT_EQ(m.contents(f.fd, a)[0], std::byte{0x5a}) << "the work wrote the BO";
    w = {};
    w.in.handle = 999;
    EXPECT_EQ(m.kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE, &w), -ENOENT);
}

// amdgpu_mode_dumb_mmap refuses a NO_CPU_ACCESS BO; amdgpu_gem_prime_export a VM_ALWAYS_VALID
// one (and no other for its flags): both EPERM.
TEST_F(FakeSemantics, NoCpuAccessBosHaveNoMmapOffsetAndAlwaysValidBosNoDmabuf) {
    uint32_t invisible =
        m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_NO_CPU_ACCESS, 1);
    uint32_t perVm =
        m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_VRAM,
                   AMDGPU_GEM_CREATE_VM_ALWAYS_VALID | AMDGPU_GEM_CREATE_NO_CPU_ACCESS, 2);
    uint32_t visible =
        m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED, 3);
    drm_amdgpu_gem_mmap mm{};
    mm.in.handle = invisible;
    EXPECT_EQ(m.kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_GEM_MMAP, &mm), -EPERM);
    mm = {};
    mm.in.handle = visible;
    EXPECT_EQ(m.kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_GEM_MMAP, &mm), 0);
    drm_prime_handle p{};
    p.handle = perVm;
    EXPECT_EQ(m.kernel->ioctl(f.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p), -EPERM);
    p = {};
    p.handle = invisible;
    ASSERT_EQ(m.kernel->ioctl(f.fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &p), 0);
    m.kernel->close(p.fd);
}

TEST_F(FakeSemantics, OverlappingVaMapIsRefused) {
    uint32_t a = m.createBo(f, 8192, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    EXPECT_EQ(m.mapBo(f, a, 0x10000, 0, 8192), 0);
    EXPECT_EQ(m.mapBo(f, a, 0x11000, 0, 4096), -EINVAL);
    EXPECT_EQ(m.mapBo(f, a, 0x20000, 4096, 8192), -EINVAL) << "beyond the BO";
    EXPECT_EQ(m.mapBo(f, a, 0x12000, 0, 4096), 0);
}

TEST_F(FakeSemantics, ListHandlesAsksForALargerArray) {
    for (int i = 0; i < 3; ++i)
        m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    drm::GemListHandles args;
    EXPECT_EQ(m.kernel->ioctl(f.fd, drm::kIoctlGemListHandles, &args), 0);
    EXPECT_EQ(args.numEntries, 3u);
    m.kernel->profile = KernelProfile::Before6_18;
    EXPECT_EQ(m.kernel->ioctl(f.fd, drm::kIoctlGemListHandles, &args), -EINVAL);
}

TEST_F(FakeSemantics, SameDeviceImportIsTheSameObjectAndOtherFilesCannotMmapIt) {
    uint32_t a = m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    uint64_t off = m.mmapOffset(f, a);
    AppFile g = m.open(1, 4, 128);
    int err = 0;
    EXPECT_EQ(m.kernel->mmap(g.fd, off, 4096, 0, &err), nullptr);
    EXPECT_EQ(err, EACCES);
    uint32_t b = m.share(f, a, g);
    EXPECT_EQ(m.kernel->fileOf(g.fd)->handles.at(b), m.kernel->fileOf(f.fd)->handles.at(a));
    EXPECT_NE(m.kernel->mmap(g.fd, off, 4096, 0, &err), nullptr);
    EXPECT_EQ(m.share(f, a, g), b) << "importing twice gives the same handle";
}

TEST_F(FakeSemantics, UnknownRequestsAndFds) {
    int x = 0;
    EXPECT_EQ(m.kernel->ioctl(f.fd, 0x1234, &x), -ENOTTY);
    EXPECT_EQ(m.kernel->ioctl(999999, DRM_IOCTL_VERSION, &x), -EBADF);
    EXPECT_EQ(m.kernel->open("/dev/dri/renderD200"), -ENOENT);
    EXPECT_EQ(m.kernel->dup(999999), -EBADF);
    struct stat st {};
    EXPECT_EQ(m.kernel->fstat(999999, &st), -EBADF);
    EXPECT_EQ(m.kernel->pidGetFd(5, 5), -EBADF);
    EXPECT_EQ(m.kernel->sameFile(kSelfPid, 999999, 1, 3), -EBADF);
}

} // namespace
} // namespace fakedrm
