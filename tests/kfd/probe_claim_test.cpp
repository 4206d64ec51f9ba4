// Probing, and which files and mappings the backend claims.
#include "kfd_test_machine.h"

#include "hal/registry.h"
#include "kfd/driver_kernel.h"
#include "kfd/kfd_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/sysmacros.h>

using namespace fakekfd;
using ::testing::HasSubstr;

TEST(KfdProbe, GivenKfd111_ThenPresentWithPriorityAboveDrm) {
    TestMachine m(machineSpec(1));
    auto a = kfd::probeKfd(*m.kernel, m.settings);
    EXPECT_TRUE(a.present);
    EXPECT_EQ(a.priority, 100);
    EXPECT_THAT(a.reason, HasSubstr("1.11"));
}

TEST(KfdProbe, GivenKfd17_ThenNotPresentBecauseTooOld) {
    TestMachine m(machineSpec(1));
    m.kernel->setVersion(1, 7);
    auto a = kfd::probeKfd(*m.kernel, m.settings);
    EXPECT_FALSE(a.present);
    EXPECT_THAT(a.reason, HasSubstr("1.7 of /fakedev/kfd is too old"));
    m.kernel->setVersion(2, 0);
    EXPECT_FALSE(kfd::probeKfd(*m.kernel, m.settings).present);
}

TEST(KfdProbe, GivenNoKfdNode_ThenNotPresentBecauseMissing) {
    TestMachine m(machineSpec(1));
    m.kernel->setKfdOpenError(-ENOENT);
    auto a = kfd::probeKfd(*m.kernel, m.settings);
    EXPECT_FALSE(a.present);
    EXPECT_THAT(a.reason, HasSubstr("no /fakedev/kfd"));
}

TEST(KfdProbe, GivenNoPermission_ThenNotPresentBecausePermission) {
    TestMachine m(machineSpec(1));
    m.kernel->setKfdOpenError(-EACCES);
    EXPECT_THAT(kfd::probeKfd(*m.kernel, m.settings).reason, HasSubstr("permission denied"));
    m.kernel->setKfdOpenError(-EIO);
    EXPECT_THAT(kfd::probeKfd(*m.kernel, m.settings).reason, HasSubstr("cannot open"));
}

TEST(KfdProbe, GivenGetVersionFails_ThenNotPresentWithTheError) {
    TestMachine m(machineSpec(1));
    m.kernel->failCall("ioctl:GET_VERSION", ENOTTY);
    auto a = kfd::probeKfd(*m.kernel, m.settings);
    EXPECT_FALSE(a.present);
    EXPECT_THAT(a.reason, HasSubstr("AMDKFD_IOC_GET_VERSION"));
}

TEST(KfdProbe, GivenTheBackendObject_ThenItProbesAndCreatesKfdDevices) {
    TestMachine m(machineSpec(1));
    kfd::KfdBackend backend([&](const settings::Settings&) {
        return base::Result<std::shared_ptr<kfd::KernelInterface>>(
            std::static_pointer_cast<kfd::KernelInterface>(m.kernel));
    });
    EXPECT_STREQ(backend.name(), "kfd");
    EXPECT_TRUE(backend.probe(m.settings).present);
    hal::DeviceEnv env;
    env.settings = &m.settings;
    auto dev = backend.createDevice(env);
    ASSERT_TRUE(dev.ok());
    EXPECT_EQ(dev.value()->backendName(), "kfd");
    EXPECT_FALSE(backend.createDevice(hal::DeviceEnv{}).ok());
}

TEST(KfdProbe, GivenNoKfdDriverOption_ThenTheKernelIsTheRealOne) {
    settings::Settings settings;
    kfd::KernelInterface* made = nullptr;
    auto kernel = kfd::kernelFor(settings, [&] {
        auto k = std::make_unique<FakeKernel>(topology::Topology(), "/fakedev");
        made = k.get();
        return std::unique_ptr<kfd::KernelInterface>(std::move(k));
    });
    ASSERT_TRUE(kernel.ok()) << kernel.error().describe();
    EXPECT_EQ(kernel.value().get(), made);
}

TEST(KfdProbe, GivenAKfdDriverRootOthersMayWrite_ThenTheBackendIsNotPresentNamingTheOption) {
    testsupport::TempDir root;
    ASSERT_EQ(0, chmod(root.path().c_str(), 0777));
    settings::Settings settings;
    settings.kfdDriver = root.path();
    kfd::KfdBackend backend([](const settings::Settings& s) {
        return kfd::kernelFor(s, [] { return std::unique_ptr<kfd::KernelInterface>(); });
    });
    auto answer = backend.probe(settings);
    EXPECT_FALSE(answer.present);
    EXPECT_THAT(answer.reason, HasSubstr("kfd-driver '" + root.path() + "'"));
    EXPECT_THAT(answer.reason, HasSubstr("writable by group or others"));
    hal::DeviceEnv env;
    env.settings = &settings;
    EXPECT_FALSE(backend.createDevice(env).ok());
}

TEST(KfdProbe, GivenAKfdDriverRootWhereNoDriverServes_ThenKfdCannotBeOpened) {
    testsupport::TempDir root;
    ASSERT_EQ(0, chmod(root.path().c_str(), 0755));
    settings::Settings settings;
    settings.kfdDriver = root.path();
    bool realMade = false;
    auto kernel = kfd::kernelFor(settings, [&] {
        realMade = true;
        return std::unique_ptr<kfd::KernelInterface>(
            std::make_unique<FakeKernel>(topology::Topology(), "/dev"));
    });
    ASSERT_TRUE(kernel.ok()) << kernel.error().describe();
    EXPECT_TRUE(realMade); // what the driver does not answer, the real kernel does
    // /dev/kfd is the driver's, whose socket nothing listens on: no file, and not the real one.
    EXPECT_EQ(-EIO, kernel.value()->open("/dev/kfd", O_RDWR));
    auto answer = kfd::probeKfd(*kernel.value(), settings);
    EXPECT_FALSE(answer.present);
    EXPECT_THAT(answer.reason, HasSubstr("/dev/kfd"));
}

TEST(KfdProbe, GivenTheBuiltLibrary_WhenLoadedOnAMachineWithoutKfd_ThenItSaysWhy) {
    testsupport::TempDir dev;
    settings::Settings settings;
    settings.devRoot = dev.path();
    hal::BackendRegistry registry;
    registry.loadFile(std::string(CRIU_AMDGPU_BUILD_BACKEND_DIR) + "/kfd.so", settings, {});
    ASSERT_EQ(registry.candidates().size(), 1u);
    const auto& c = registry.candidates()[0];
    EXPECT_TRUE(c.loaded) << c.skipReason;
    EXPECT_EQ(c.name, "kfd");
    EXPECT_FALSE(c.probe.present);
    EXPECT_THAT(c.probe.reason, HasSubstr("no " + dev.path() + "/kfd"));
}

TEST(KfdClaim, GivenKfdAndAmdgpuRenderFds_ThenTheyAreClaimedAndOthersAreNot) {
    TestMachine m(machineSpec(2));
    m.kernel->addForeignRenderNode(200);
    m.kernel->addProcess(10, {});
    m.kernel->seize(10);
    auto store = formats::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    hal::FileRef kfdFile = m.fileRef(10, 3, 1);
    EXPECT_TRUE(dev->claimFile(kfdFile).value());
    hal::FileRef render = m.fileRef(10, 5, 2);
    EXPECT_TRUE(dev->claimFile(render).value());
    hal::FileRef foreign;
    foreign.fd = m.kernel->open(m.kernel->renderPath(200), O_RDWR);
    ASSERT_GE(foreign.fd, 0);
    ASSERT_EQ(0, m.kernel->fstat(foreign.fd, &foreign.st));
    EXPECT_FALSE(dev->claimFile(foreign).value()) << "renderD200 is i915's";
    // What the device says of the fd decides, not criu's stat of it (a user-space KFD driver's
    // files are block nodes to the kernel: tests/kfd/DRIVER.md).
    hal::FileRef card = render;
    card.st.st_rdev = makedev(226, 0);
    EXPECT_TRUE(dev->claimFile(card).value()) << "criu's stat says card0, the device renderD129";
    hal::FileRef regular = kfdFile;
    regular.st.st_mode = S_IFBLK | 0600;
    regular.st.st_rdev = makedev(7, 3);
    EXPECT_TRUE(dev->claimFile(regular).value()) << "criu's stat says loop3, the device kfd";
    m.kernel->failCall("fstat", EIO);
    EXPECT_FALSE(dev->claimFile(kfdFile).value()) << "a file the device says nothing of";
    // A GPU of KFD's topology is claimed by its render minor, whatever DRM_IOCTL_VERSION answers;
    // a render node outside it that VERSION cannot name is not.
    m.kernel->failCall("ioctl:DRM_VERSION", EIO);
    EXPECT_TRUE(dev->claimFile(render).value());
    m.kernel->failCall("ioctl:DRM_VERSION", EIO);
    EXPECT_FALSE(dev->claimFile(foreign).value());

    hal::VmaRef vma;
    vma.fd = render.fd;
    vma.st = render.st;
    EXPECT_TRUE(dev->claimVma(vma).value());
    vma.fd = kfdFile.fd;
    vma.st = kfdFile.st;
    EXPECT_TRUE(dev->claimVma(vma).value());
    vma.fd = foreign.fd;
    vma.st = foreign.st;
    EXPECT_FALSE(dev->claimVma(vma).value()) << "a mapping of i915's renderD200";
}

TEST(KfdClaim, GivenARenderFdOfNoKnownProcess_WhenDumped_ThenTheErrorSaysSo) {
    TestMachine m(machineSpec(1));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    hal::FileRef f;
    f.fd = m.kernel->open(m.kernel->renderPath(128), O_RDWR);
    f.path = "/dev/dri/renderD128";
    ASSERT_EQ(0, m.kernel->fstat(f.fd, &f.st));
    auto r = dev->dumpFile(f);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("no process holds /dev/dri/renderD128"));
}
