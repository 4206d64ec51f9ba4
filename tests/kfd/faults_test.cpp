// Fault injection in every kernel and libdrm call: the error names the GPU and the step, the
// process is unpaused at once, nothing leaks; GoogleMock checks the order of CRIU ops.
#include "kfd_test_machine.h"

#include "hal/proto_image.h"
#include "kfd/kfd_criu.h"
#include "kfd/kfd_images.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace fakekfd;
using ::testing::_;
using ::testing::AnyNumber;
using ::testing::HasSubstr;
using ::testing::InSequence;
using ::testing::NiceMock;

namespace {

class MockObserver : public Observer {
public:
    MOCK_METHOD(void, criuOp, (int pid, uint32_t op, int result), (override));
    MOCK_METHOD(void, sdmaCopy, (uint32_t gpuId, bool toBo, uint64_t bytes), (override));
};

ProcessSpec twoGpuProcess() {
    ProcessSpec spec;
    spec.bos = {{0, 5 << 20, kVram}, {0, 12288, kGtt}, {1, 3 << 20, kVram}, {1, 4096, kDoorbell},
                {1, 8192, kUserptr}};
    return spec;
}

struct Case {
    const char* call;
    int err;
    const char* expect; ///< a substring the error must carry
};

class DumpFault : public ::testing::TestWithParam<Case> {};

} // namespace

TEST_P(DumpFault, GivenAFailingCall_WhenDumping_ThenTheErrorNamesTheStepAndTheProcessIsUnpaused) {
    const Case& c = GetParam();
    TestMachine m(machineSpec(2));
    m.settings.maxBufferSize = 1 << 20;
    m.kernel->addProcess(100, twoGpuProcess());
    m.kernel->seize(100);
    size_t fds = m.kernel->openFdCount();
    auto store = hal::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    hal::FileRef file = m.fileRef(100, 3, 5);
    m.kernel->failCall(c.call, c.err);
    hal::Result<void> r = dev->dumpFile(file);
    if (r.ok())
        r = dev->finishDump(true);
    ASSERT_FALSE(r.ok()) << c.call << " did not fail the dump";
    EXPECT_THAT(r.error().describe(), HasSubstr(c.expect));
    EXPECT_EQ(r.error().sysErrno(), c.err);
    (void)dev->finishDump(false);
    FakeProcess* p = m.kernel->process(100);
    if (std::string(c.call) != "ioctl:UNPAUSE") { // when UNPAUSE itself fails, nothing can
        EXPECT_FALSE(p->paused) << "process left paused after " << c.call;
        EXPECT_EQ(p->evictions, 0);
    }
    m.kernel->close(file.fd);
    EXPECT_EQ(m.kernel->openFdCount(), fds) << "fds leaked after " << c.call;
    EXPECT_EQ(m.kernel->liveDrmObjects(), 0u) << "libdrm objects leaked after " << c.call;
    if (std::string(c.call) != "ioctl:UNPAUSE") {
        EXPECT_FALSE(store->exists(kfd::kfdImageName(5)));
    }
}

INSTANTIATE_TEST_SUITE_P(
    EveryCall, DumpFault,
    ::testing::Values(Case{"ioctl:PROCESS_INFO", EINVAL, "PROCESS_INFO"},
                      Case{"ioctl:CHECKPOINT", ENOMEM, "CHECKPOINT"},
                      Case{"ioctl:UNPAUSE", EINVAL, "UNPAUSE"},
                      Case{"listPids", EACCES, "cannot list processes"},
                      Case{"pidGetFd", EPERM, "pidfd_getfd"},
                      Case{"open", EACCES, "GPU 0x1000: cannot open render node"},
                      Case{"deviceInitialize", ENODEV, "amdgpu_device_initialize"},
                      Case{"ctxCreate", ENOMEM, "amdgpu_cs_ctx_create"},
                      Case{"boFromUserMem", EFAULT, "amdgpu_create_bo_from_user_mem"},
                      Case{"vaRangeAlloc", ENOMEM, "amdgpu_va_range_alloc"},
                      Case{"boVaOp", EINVAL, "amdgpu_bo_va_op"},
                      Case{"boAllocGtt", ENOMEM, "command buffer"},
                      Case{"boCpuMap", EFAULT, "amdgpu_bo_cpu_map"},
                      Case{"boImportDmabuf", EINVAL, "amdgpu_bo_import"},
                      Case{"boListCreate", ENOMEM, "amdgpu_bo_list_create"},
                      Case{"submitSdma", ENOMEM, "(VRAM, "},
                      Case{"waitFence", ETIME, "amdgpu_cs_query_fence_status"}),
    [](const auto& info) {
        std::string n = info.param.call;
        n.erase(std::remove_if(n.begin(), n.end(), [](char ch) { return !isalnum(ch); }), n.end());
        return n;
    });

TEST(KfdFaultOrder, GivenAnSdmaFailureMidDump_ThenUnpauseFollowsAtOnce) {
    TestMachine m(machineSpec(2));
    m.settings.maxBufferSize = 1 << 20;
    m.kernel->addProcess(110, twoGpuProcess());
    m.kernel->seize(110);
    NiceMock<MockObserver> obs;
    m.kernel->setObserver(&obs);
    {
        InSequence seq;
        EXPECT_CALL(obs, criuOp(110, KFD_CRIU_OP_PROCESS_INFO, 0));
        EXPECT_CALL(obs, criuOp(110, KFD_CRIU_OP_CHECKPOINT, 0));
        EXPECT_CALL(obs, criuOp(110, KFD_CRIU_OP_UNPAUSE, 0));
    }
    auto store = hal::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    ASSERT_TRUE(dev->pauseProcess(110).value());
    ASSERT_TRUE(dev->checkpointProcess(110).ok());
    m.kernel->failCall("waitFence", EIO, 3);
    hal::FileRef file = m.fileRef(110, 3, 5);
    auto r = dev->dumpFile(file);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("of GPU 0x1"));
    EXPECT_EQ(dev->phaseOf(110), hal::DumpPhase::Failed);
    EXPECT_TRUE(dev->finishDump(false).ok());
}

TEST(KfdFaultOrder, GivenACorruptIb_WhenTheGpuFaults_ThenTheDumpFailsAndUnpauses) {
    TestMachine m(machineSpec(1));
    ProcessSpec spec;
    spec.bos = {{0, 1 << 20, kVram}};
    m.kernel->addProcess(111, spec);
    m.kernel->seize(111);
    auto store = hal::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    // A dmabuf of another GPU cannot be imported here; a BO list without the BO faults the VM.
    m.kernel->failCall("boImportDmabuf", ENODEV);
    hal::FileRef file = m.fileRef(111, 3, 5);
    EXPECT_FALSE(dev->dumpFile(file).ok());
    EXPECT_FALSE(m.kernel->process(111)->paused);
}

TEST(KfdFaultOrder, GivenASuccessfulRestore_ThenResumeComesAfterEveryContentCopy) {
    TestMachine src(machineSpec(2));
    src.kernel->addProcess(120, twoGpuProcess());
    src.kernel->seize(120);
    auto store = hal::openDirectoryStore(src.dir / "").value();
    {
        auto dev = src.device(store.get());
        hal::FileRef file = src.fileRef(120, 3, 5);
        ASSERT_TRUE(dev->dumpFile(file).ok());
        ASSERT_TRUE(dev->finishDump(true).ok());
    }
    TestMachine dst(machineSpec(2));
    dst.settings.parallelRestore = true;
    dst.kernel->setCurrentPid(121);
    NiceMock<MockObserver> obs;
    dst.kernel->setObserver(&obs);
    {
        InSequence seq;
        EXPECT_CALL(obs, criuOp(121, KFD_CRIU_OP_RESTORE, 0));
        EXPECT_CALL(obs, sdmaCopy(_, true, _)).Times(::testing::AtLeast(4));
        EXPECT_CALL(obs, criuOp(121, KFD_CRIU_OP_RESUME, 0));
    }
    EXPECT_CALL(obs, sdmaCopy(_, false, _)).Times(0);
    auto dev = dst.device(store.get());
    ASSERT_TRUE(dev->restoreFile(5).ok());
    ASSERT_TRUE(dev->postForking().ok());
    auto resumed = dev->resumeProcess(121);
    ASSERT_TRUE(resumed.ok()) << resumed.error().describe();
}

TEST(KfdFaultOrder, GivenAContentCopyFailureInParallelRestore_ThenResumeIsNeverIssued) {
    TestMachine src(machineSpec(2));
    src.kernel->addProcess(130, twoGpuProcess());
    src.kernel->seize(130);
    auto store = hal::openDirectoryStore(src.dir / "").value();
    {
        auto dev = src.device(store.get());
        hal::FileRef file = src.fileRef(130, 3, 5);
        ASSERT_TRUE(dev->dumpFile(file).ok());
        ASSERT_TRUE(dev->finishDump(true).ok());
    }
    TestMachine dst(machineSpec(2));
    dst.settings.parallelRestore = true;
    dst.kernel->setCurrentPid(131);
    NiceMock<MockObserver> obs;
    dst.kernel->setObserver(&obs);
    EXPECT_CALL(obs, criuOp(_, _, _)).Times(AnyNumber());
    EXPECT_CALL(obs, criuOp(_, KFD_CRIU_OP_RESUME, _)).Times(0);
    auto dev = dst.device(store.get());
    ASSERT_TRUE(dev->restoreFile(5).ok());
    dst.kernel->failCall("submitSdma", EIO, 2);
    ASSERT_TRUE(dev->postForking().ok());
    auto resumed = dev->resumeProcess(131);
    ASSERT_FALSE(resumed.ok());
    EXPECT_THAT(resumed.error().describe(), HasSubstr("amdgpu_cs_submit"));
    EXPECT_THAT(resumed.error().describe(), HasSubstr("amdgpu-kfd-5.img"));
    EXPECT_TRUE(dev->finishRestore(false).ok());
}

class RestoreFault : public ::testing::TestWithParam<Case> {};

TEST_P(RestoreFault, GivenAFailingCall_WhenRestoring_ThenTheErrorNamesTheStep) {
    const Case& c = GetParam();
    TestMachine src(machineSpec(2));
    src.kernel->addProcess(140, twoGpuProcess());
    src.kernel->seize(140);
    auto store = hal::openDirectoryStore(src.dir / "").value();
    {
        auto dev = src.device(store.get());
        hal::FileRef file = src.fileRef(140, 3, 5);
        ASSERT_TRUE(dev->dumpFile(file).ok());
        ASSERT_TRUE(dev->finishDump(true).ok());
    }
    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(141);
    auto dev = dst.device(store.get());
    dst.kernel->failCall(c.call, c.err);
    auto r = dev->restoreFile(5);
    ASSERT_FALSE(r.ok()) << c.call;
    EXPECT_THAT(r.error().describe(), HasSubstr(c.expect));
    EXPECT_TRUE(dev->finishRestore(false).ok());
    EXPECT_FALSE(dev->resumeProcess(141).ok());
    EXPECT_EQ(dst.kernel->liveDrmObjects(), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    EveryCall, RestoreFault,
    ::testing::Values(Case{"ioctl:RESTORE", EINVAL, "RESTORE"},
                      Case{"open", ENOENT, "cannot open"},
                      Case{"boImportDmabuf", EINVAL, "amdgpu_bo_import"},
                      Case{"submitSdma", ENOMEM, "amdgpu_cs_submit"},
                      Case{"waitFence", ECANCELED, "amdgpu_cs_query_fence_status"}),
    [](const auto& info) {
        std::string n = info.param.call;
        n.erase(std::remove_if(n.begin(), n.end(), [](char ch) { return !isalnum(ch); }), n.end());
        return n;
    });

TEST(KfdFaultOrder, GivenResumeFails_ThenTheErrorSaysResume) {
    TestMachine src(machineSpec(1));
    ProcessSpec spec;
    spec.bos = {{0, 4096, kVram}};
    src.kernel->addProcess(150, spec);
    src.kernel->seize(150);
    auto store = hal::openDirectoryStore(src.dir / "").value();
    {
        auto dev = src.device(store.get());
        hal::FileRef file = src.fileRef(150, 3, 5);
        ASSERT_TRUE(dev->dumpFile(file).ok());
        ASSERT_TRUE(dev->finishDump(true).ok());
    }
    TestMachine dst(machineSpec(1));
    dst.kernel->setCurrentPid(151);
    auto dev = dst.device(store.get());
    ASSERT_TRUE(dev->restoreFile(5).ok());
    dst.kernel->failCall("ioctl:RESUME", EINVAL);
    auto r = dev->resumeProcess(151);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("RESUME"));
}

TEST(KfdFaultOrder, GivenAnUntracedProcess_WhenItsKfdFileIsUsed_ThenTheKernelRefusesWithEbadf) {
    TestMachine m(machineSpec(1));
    m.kernel->addProcess(160, {});
    m.kernel->seize(160);
    int fd = m.kernel->criuCopyOf(160, 3);
    m.kernel->setObserver(nullptr);
    // A copy obtained while seized stops working for a process criu no longer traces.
    auto fresh = std::make_shared<FakeKernel>(m.topology, "/fakedev");
    fresh->addProcess(161, {});
    fresh->seize(161);
    int copy = fresh->criuCopyOf(161, 3);
    fresh->setCurrentPid(1);
    auto ok = kfd::criuProcessInfo(*fresh, copy);
    EXPECT_TRUE(ok.ok());
    auto again = kfd::criuCheckpoint(*fresh, copy, {});
    EXPECT_FALSE(again.ok()) << "CHECKPOINT with wrong counts must fail";
    auto unpaused = kfd::criuUnpause(*fresh, copy);
    EXPECT_TRUE(unpaused.ok());
    auto twice = kfd::criuUnpause(*fresh, copy);
    EXPECT_FALSE(twice.ok()) << "UNPAUSE without PROCESS_INFO is EINVAL";
    auto ck = kfd::criuCheckpoint(*fresh, copy, ok.value());
    EXPECT_FALSE(ck.ok()) << "CHECKPOINT needs PROCESS_INFO first";
    m.kernel->close(fd);
}
