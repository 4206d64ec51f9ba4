// The fake KFD's RESTORE op and ioctl dispatch called directly, held to the kernel's
// kfd_chardev.c (mainline, as of the criu_restore that accepts num_bos 0): criu_restore's
// argument checks, then criu_restore_process, criu_restore_devices, criu_restore_bos (with
// criu_restore_memory_of_gpu) and the final private-data size check, reason by reason, and
// kfd_ioctl's dispatch by command number. Each test names the kernel function it mirrors.
#include "kfd_test_machine.h"

#include <gtest/gtest.h>

using namespace fakekfd;

namespace {

constexpr int kSrcPid = 5151;
constexpr int kPid = 5252;

/// A checkpoint of a process (PROCESS_INFO, CHECKPOINT, UNPAUSE through the fake's ioctls, as
/// criu's plugin makes them), and a fresh process of another pid on the same machine that has
/// opened /dev/kfd and both render nodes: criu's restorer, which runs in the restored task.
struct Restorable {
    TestMachine src{machineSpec(2, 0x1000, 128)};
    TestMachine& dst = src;
    std::vector<kfd_criu_device_bucket> devices;
    std::vector<kfd_criu_bo_bucket> bos;
    std::vector<uint8_t> priv;
    uint32_t numObjects = 0;
    int kfd = -1;
    int render[2] = {-1, -1};

    explicit Restorable(const ProcessSpec& spec) {
        FakeKernel& s = *src.kernel;
        s.addProcess(kSrcPid, spec);
        s.seize(kSrcPid);
        int copy = s.criuCopyOf(kSrcPid, 3);
        kfd_ioctl_criu_args a{};
        a.op = KFD_CRIU_OP_PROCESS_INFO;
        EXPECT_EQ(0, s.ioctl(copy, AMDKFD_IOC_CRIU_OP, &a));
        devices.resize(a.num_devices);
        bos.resize(std::max<uint32_t>(a.num_bos, 1)); // CHECKPOINT wants a bos array even empty
        priv.resize(a.priv_data_size);
        numObjects = a.num_objects;
        a.op = KFD_CRIU_OP_CHECKPOINT;
        a.devices = reinterpret_cast<uint64_t>(devices.data());
        a.bos = reinterpret_cast<uint64_t>(bos.data());
        a.priv_data = reinterpret_cast<uint64_t>(priv.data());
        EXPECT_EQ(0, s.ioctl(copy, AMDKFD_IOC_CRIU_OP, &a));
        bos.resize(a.num_bos);
        for (const auto& b : bos)
            if (b.dmabuf_fd != kfd::kInvalidFd)
                s.close(static_cast<int>(b.dmabuf_fd));
        kfd_ioctl_criu_args u{};
        u.op = KFD_CRIU_OP_UNPAUSE;
        EXPECT_EQ(0, s.ioctl(copy, AMDKFD_IOC_CRIU_OP, &u));
        s.close(copy);

        FakeKernel& d = *dst.kernel;
        d.setCurrentPid(kPid);
        kfd = d.taskOpen(d.kfdPath(), O_RDWR);
        for (int i = 0; i < 2; ++i)
            render[i] = d.taskOpen(d.renderPath(128 + i), O_RDWR);
        for (auto& dev : devices)
            dev.drm_fd = static_cast<uint32_t>(render[dev.actual_gpu_id == gpuId(0) ? 0 : 1]);
    }
    uint32_t gpuId(int gpu) const { return dst.topology.gpus()[static_cast<size_t>(gpu)]->gpuId; }
    /// The RESTORE arguments criu's plugin passes for this checkpoint.
    kfd_ioctl_criu_args args() {
        kfd_ioctl_criu_args a{};
        a.op = KFD_CRIU_OP_RESTORE;
        a.devices = reinterpret_cast<uint64_t>(devices.data());
        a.bos = bos.empty() ? 0 : reinterpret_cast<uint64_t>(bos.data());
        a.priv_data = reinterpret_cast<uint64_t>(priv.data());
        a.priv_data_size = priv.size();
        a.num_devices = static_cast<uint32_t>(devices.size());
        a.num_bos = static_cast<uint32_t>(bos.size());
        a.num_objects = numObjects;
        return a;
    }
    int restore(kfd_ioctl_criu_args a) { return dst.kernel->ioctl(kfd, AMDKFD_IOC_CRIU_OP, &a); }
    /// RESTORE answers `err` and the process is left without BOs or a restored state.
    void expectRefused(int err, kfd_ioctl_criu_args a, const char* why) {
        EXPECT_EQ(-err, restore(a)) << why;
        FakeProcess* p = dst.kernel->process(kPid);
        ASSERT_NE(p, nullptr);
        EXPECT_TRUE(p->bos.empty()) << why << ": a refused RESTORE made BOs";
        EXPECT_FALSE(p->restored) << why;
    }
};

ProcessSpec twoGpuSpec() {
    ProcessSpec spec;
    spec.bos = {
        {0, 1 << 20, kVram}, {1, 8192, kGtt}, {1, kDoorbellSlice, kDoorbell}, {0, 4096, kMmio}};
    return spec;
}

size_t indexOfFlag(const std::vector<kfd_criu_bo_bucket>& bos, uint32_t flag) {
    for (size_t i = 0; i < bos.size(); ++i)
        if (bos[i].alloc_flags & flag)
            return i;
    ADD_FAILURE() << "no BO with flag " << std::hex << flag;
    return 0;
}

} // namespace

TEST(KfdCriuRestore, GivenTheCheckpointAsTaken_ThenRestoreMakesItsBosWithOffsetsAndDmabufs) {
    Restorable r(twoGpuSpec());
    kfd_ioctl_criu_args a = r.args();
    ASSERT_EQ(0, r.restore(a)) << "criu_restore";
    FakeProcess* p = r.dst.kernel->process(kPid);
    ASSERT_EQ(p->bos.size(), 4u);
    EXPECT_TRUE(p->restored);
    for (const auto& b : r.bos) {
        EXPECT_NE(b.restored_offset, 0u);
        EXPECT_EQ(b.dmabuf_fd != kfd::kInvalidFd, kfd::boHasContents(b.alloc_flags))
            << "criu_restore_bo exports VRAM and GTT BOs only";
    }
    EXPECT_EQ(-EINVAL, r.restore(r.args())) << "criu_restore_devices: pdd->drm_file is set";
    EXPECT_EQ(p->bos.size(), 4u) << "a second RESTORE made BOs";
}

TEST(KfdCriuRestore, GivenMissingArguments_ThenEinvalAsCriuRestore) {
    Restorable r(twoGpuSpec());
    const std::pair<void (*)(kfd_ioctl_criu_args&), const char*> cases[] = {
        {[](kfd_ioctl_criu_args& a) { a.devices = 0; }, "no devices array"},
        {[](kfd_ioctl_criu_args& a) { a.priv_data = 0; }, "no private data"},
        {[](kfd_ioctl_criu_args& a) { a.priv_data_size = 0; }, "priv_data_size 0"},
        {[](kfd_ioctl_criu_args& a) { a.num_devices = 0; }, "num_devices 0"},
        {[](kfd_ioctl_criu_args& a) { a.bos = 0; }, "num_bos > 0 without a bos array"},
    };
    for (const auto& [change, why] : cases) {
        kfd_ioctl_criu_args a = r.args();
        change(a);
        r.expectRefused(EINVAL, a, why);
    }
    EXPECT_EQ(0, r.restore(r.args())) << "the refusals changed nothing";
}

TEST(KfdCriuRestore, GivenAProcessWithoutBos_ThenItRestoresWithoutABosArrayAsCriuRestore) {
    ProcessSpec spec;
    Restorable r(spec);
    ASSERT_TRUE(r.bos.empty());
    kfd_ioctl_criu_args a = r.args();
    ASSERT_EQ(a.bos, 0u);
    EXPECT_EQ(0, r.restore(a)) << "criu_restore accepts num_bos 0 (bos may be NULL)";
    EXPECT_TRUE(r.dst.kernel->process(kPid)->restored);
}

TEST(KfdCriuRestore, GivenPrivateDataOfAnotherVersion_ThenEinvalAsCriuRestoreProcess) {
    Restorable r(twoGpuSpec());
    r.priv[0] ^= 0xff;
    r.expectRefused(EINVAL, r.args(), "Invalid CRIU API version");
}

TEST(KfdCriuRestore, GivenBadDeviceBuckets_ThenEinvalAsCriuRestoreDevices) {
    Restorable r(twoGpuSpec());
    kfd_ioctl_criu_args a = r.args();
    a.num_devices = 1;
    r.expectRefused(EINVAL, a, "num_devices != n_pdds");
    auto withDevice = [&](auto change, const char* why) {
        std::vector<kfd_criu_device_bucket> saved = r.devices;
        change(r.devices[0]);
        r.expectRefused(EINVAL, r.args(), why);
        r.devices = saved;
    };
    withDevice([](kfd_criu_device_bucket& d) { d.user_gpu_id = 0; }, "Invalid user gpu_id");
    withDevice([](kfd_criu_device_bucket& d) { d.actual_gpu_id = 0xdead; },
               "kfd_device_by_id: no such device");
    withDevice([](kfd_criu_device_bucket& d) { d.drm_fd = 999999; },
               "Invalid render node file descriptor sent from plugin");
    withDevice([&](kfd_criu_device_bucket& d) { d.drm_fd = static_cast<uint32_t>(r.kfd); },
               "kfd_process_device_init_vm: not a render node");
    withDevice([&](kfd_criu_device_bucket& d) { d.drm_fd = r.devices[1].drm_fd; },
               "kfd_process_device_init_vm: the render node of another device");
    withDevice([&](kfd_criu_device_bucket& d) { d.user_gpu_id = r.devices[1].user_gpu_id; },
               "two buckets for one user gpu_id");
    EXPECT_EQ(0, r.restore(r.args())) << "the refusals changed nothing";
}

TEST(KfdCriuRestore, GivenAProcessThatAcquiredAVm_ThenEinvalAsCriuRestoreDevices) {
    Restorable r(twoGpuSpec());
    kfd_ioctl_acquire_vm_args vm{};
    vm.gpu_id = r.gpuId(1);
    vm.drm_fd = static_cast<uint32_t>(r.render[1]);
    ASSERT_EQ(0, r.dst.kernel->ioctl(r.kfd, AMDKFD_IOC_ACQUIRE_VM, &vm));
    r.expectRefused(EINVAL, r.args(), "pdd->drm_file is already set");
}

TEST(KfdCriuRestore, GivenAProcessThatAlreadyHasBos_ThenEinvalAsCriuRestoreDevices) {
    Restorable r(twoGpuSpec());
    ProcessSpec running;
    running.bos = {{0, 4096, kGtt}};
    FakeKernel& k = *r.dst.kernel;
    FakeProcess* p = &k.addProcess(kPid + 1, running);
    k.setCurrentPid(kPid + 1);
    k.seize(kPid + 1); // lets this test take copies of the task's fds (pidfd_getfd)
    // The running process's own files: /dev/kfd at fd 3, its render nodes at 4 and 5.
    int kfd = k.criuCopyOf(kPid + 1, 3);
    int render[2] = {k.criuCopyOf(kPid + 1, 4), k.criuCopyOf(kPid + 1, 5)};
    for (auto& d : r.devices)
        d.drm_fd = static_cast<uint32_t>(render[d.actual_gpu_id == r.gpuId(0) ? 0 : 1]);
    kfd_ioctl_criu_args a = r.args();
    EXPECT_EQ(-EINVAL, k.ioctl(kfd, AMDKFD_IOC_CRIU_OP, &a))
        << "a process with BOs has its VM (pdd->drm_file)";
    EXPECT_FALSE(p->restored);
    EXPECT_EQ(p->bos.size(), 1u) << "its BOs are untouched";
}

TEST(KfdCriuRestore, GivenBadBoBuckets_ThenRefusedAsCriuRestoreBos) {
    Restorable r(twoGpuSpec());
    auto withBo = [&](size_t i, auto change, int err, const char* why) {
        std::vector<kfd_criu_bo_bucket> saved = r.bos;
        change(r.bos[i]);
        r.expectRefused(err, r.args(), why);
        r.bos = saved;
    };
    withBo(
        0, [](kfd_criu_bo_bucket& b) { b.gpu_id = 0xbeef; }, ENODEV,
        "criu_restore_bo: kfd_process_device_data_by_id finds no pdd");
    withBo(
        indexOfFlag(r.bos, KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL),
        [](kfd_criu_bo_bucket& b) { b.size = 4096; }, EINVAL,
        "criu_restore_memory_of_gpu: a doorbell BO is the process's doorbell slice");
    withBo(
        indexOfFlag(r.bos, KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP),
        [](kfd_criu_bo_bucket& b) { b.size = 8192; }, EINVAL,
        "criu_restore_memory_of_gpu: Invalid page size");
    EXPECT_EQ(0, r.restore(r.args())) << "the refusals changed nothing";
}

TEST(KfdCriuRestore, GivenPrivateDataShortOrLong_ThenEinvalAsCriuRestore) {
    Restorable r(twoGpuSpec());
    kfd_ioctl_criu_args a = r.args();
    a.priv_data_size -= 1;
    r.expectRefused(EINVAL, a, "short: a reader runs past max_priv_data_size");
    r.priv.push_back(0);
    a = r.args();
    r.expectRefused(EINVAL, a, "long: priv_offset != priv_data_size");
    a.priv_data_size -= 1;
    EXPECT_EQ(0, r.restore(a));
}

TEST(KfdIoctlDispatch, GivenAnotherStructSize_ThenTheCommandIsServedByNumberAsKfdIoctl) {
    TestMachine m(machineSpec(1));
    FakeKernel& k = *m.kernel;
    k.setCurrentPid(kPid);
    int kfd = k.taskOpen(k.kfdPath(), O_RDWR);
    // A caller's struct longer than the kernel's: copied out as far as it goes (the tail is
    // what the kernel had there: zeros).
    struct {
        kfd_ioctl_get_version_args v;
        uint32_t tail[2];
    } longer;
    memset(&longer, 0xff, sizeof(longer));
    EXPECT_EQ(
        0, k.ioctl(kfd, _IOR(AMDKFD_IOCTL_BASE, _IOC_NR(AMDKFD_IOC_GET_VERSION), longer), &longer));
    EXPECT_EQ(longer.v.major_version, 1u);
    EXPECT_EQ(longer.tail[0], 0u);
    EXPECT_EQ(longer.tail[1], 0u);
    // Shorter: only its bytes are written.
    uint32_t shorter[2] = {0xffffffffu, 0xffffffffu};
    EXPECT_EQ(0, k.ioctl(kfd, _IOR(AMDKFD_IOCTL_BASE, _IOC_NR(AMDKFD_IOC_GET_VERSION), uint32_t),
                         shorter));
    EXPECT_EQ(shorter[0], 1u);
    EXPECT_EQ(shorter[1], 0xffffffffu);
    // A number past the table: ENOTTY.
    uint64_t x = 0;
    EXPECT_EQ(-ENOTTY, k.ioctl(kfd, _IOR(AMDKFD_IOCTL_BASE, 0xfe, uint64_t), &x));
}

// criu_restore_memory_of_gpu: a userptr BO registers the user address it had (bo_priv->user_addr,
// the bucket's offset), so that it covers the restored process's own memory there.
TEST(KfdCriuRestore, GivenAUserptrBo_ThenRestoreRegistersTheUserAddressItHad) {
    ProcessSpec spec = twoGpuSpec();
    spec.bos.push_back({0, 65536, kUserptr});
    Restorable r(spec);
    kfd_ioctl_criu_args a = r.args();
    size_t u = indexOfFlag(r.bos, KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
    uint64_t userAddress = r.bos[u].offset;
    ASSERT_EQ(0, r.restore(a)) << "criu_restore";
    EXPECT_EQ(userAddress, r.bos[u].restored_offset);
    FakeProcess* p = r.dst.kernel->process(kPid);
    ASSERT_NE(p, nullptr);
    bool found = false;
    for (const auto& bo : p->bos)
        if (bo->allocFlags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
            found = true;
            EXPECT_EQ(userAddress, bo->mmapOffset);
        }
    EXPECT_TRUE(found) << "no userptr BO restored";
}
