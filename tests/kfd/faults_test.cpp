// Fault injection in every kernel and libdrm call: the error names the GPU and the step, the
// process is unpaused at once, nothing leaks; GoogleMock checks the order of CRIU ops.
#include "kfd_test_machine.h"
#include "loopback_handoff.h"

#include "formats/proto_image.h"
#include "kfd/kfd_criu.h"
#include "kfd/kfd_images.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "formats/topology_codec.h"
#include <sys/sysmacros.h>

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
    spec.bos = {{0, 5 << 20, kVram},
                {0, 12288, kGtt},
                {1, 3 << 20, kVram},
                {1, kDoorbellSlice, kDoorbell},
                {1, 8192, kUserptr}};
    return spec;
}

/// BOs on GPU 0 only: its content lane is the only one that calls libdrm, in a fixed order.
ProcessSpec oneGpuProcess() {
    ProcessSpec spec;
    spec.bos = {{0, 5 << 20, kVram}, {0, 12288, kGtt}, {1, kDoorbellSlice, kDoorbell}};
    return spec;
}

struct Case {
    const char* call;
    int err;
    const char* expect; ///< a substring the error must carry
    int nth = 1;        ///< which call of that name fails
};

class DumpFault : public ::testing::TestWithParam<Case> {};

} // namespace

TEST_P(DumpFault, GivenAFailingCall_WhenDumping_ThenTheErrorNamesTheStepAndTheProcessIsUnpaused) {
    const Case& c = GetParam();
    TestMachine m(machineSpec(2));
    m.settings.maxBufferSize = 1 << 20;
    // The lanes of both GPUs run at once: counting calls needs one lane.
    m.kernel->addProcess(100, c.nth > 1 ? oneGpuProcess() : twoGpuProcess());
    m.kernel->seize(100);
    size_t fds = m.kernel->openFdCount();
    auto store = formats::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    hal::FileRef file = m.fileRef(100, 3, 5);
    m.kernel->failCall(c.call, c.err, c.nth);
    base::Result<void> r = dev->dumpFile(file);
    if (r.ok())
        r = dev->finishDump(true);
    ASSERT_FALSE(r.ok()) << c.call << " did not fail the dump";
    EXPECT_THAT(r.error().describe(), HasSubstr(c.expect));
    EXPECT_EQ(r.error().sysErrno(), c.err);
    (void)dev->finishDump(false);
    FakeProcess* p = m.kernel->process(100);
    EXPECT_FALSE(p->paused) << "process left paused after " << c.call;
    EXPECT_EQ(p->evictions, 0);
    m.kernel->close(file.fd);
    EXPECT_EQ(m.kernel->openFdCount(), fds) << "fds leaked after " << c.call;
    EXPECT_EQ(m.kernel->liveDrmObjects(), 0u) << "libdrm objects leaked after " << c.call;
    EXPECT_FALSE(store->exists(formats::kfdImageName(5)));
}

INSTANTIATE_TEST_SUITE_P(
    EveryCall, DumpFault,
    ::testing::Values(Case{"ioctl:PROCESS_INFO", EINVAL, "PROCESS_INFO"},
                      Case{"ioctl:CHECKPOINT", ENOMEM, "CHECKPOINT"},
                      Case{"listPids", EACCES, "cannot list processes"},
                      Case{"pidGetFd", EPERM, "pidfd_getfd"},
                      Case{"open", EACCES, ": cannot open render node"},
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
                      Case{"waitFence", ETIME, "amdgpu_cs_query_fence_status"},
                      Case{"vaRangeAlloc", ENOSPC, "for the command buffer", 2},
                      Case{"vaRangeAlloc", ENOSPC, "for a BO", 3},
                      Case{"boVaOp", EINVAL, "(map) of the command buffer", 2},
                      Case{"boVaOp", EINVAL, "(map) of a BO", 3}),
    [](const auto& info) {
        std::string n = info.param.call;
        n.erase(std::remove_if(n.begin(), n.end(), [](char ch) { return !isalnum(ch); }), n.end());
        return n + std::to_string(info.param.nth);
    });

TEST(KfdFaultOrder, GivenUnpauseFailingOnce_WhenTheDumpEnds_ThenItIsAskedAgainAndTheProcessRuns) {
    TestMachine m(machineSpec(2));
    m.kernel->addProcess(112, oneGpuProcess());
    m.kernel->seize(112);
    auto store = formats::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    hal::FileRef file = m.fileRef(112, 3, 5);
    ASSERT_TRUE(dev->dumpFile(file).ok());
    m.kernel->failCall("ioctl:UNPAUSE", EIO);
    auto r = dev->finishDump(true);
    EXPECT_TRUE(r.ok()) << r.error().describe();
    EXPECT_FALSE(m.kernel->process(112)->paused);
    EXPECT_EQ(m.kernel->process(112)->evictions, 0);
    m.kernel->close(file.fd);
}

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
    auto store = formats::openDirectoryStore(m.dir / "").value();
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
    auto store = formats::openDirectoryStore(m.dir / "").value();
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
    auto store = formats::openDirectoryStore(src.dir / "").value();
    {
        auto dev = src.device(store.get());
        hal::FileRef file = src.fileRef(120, 3, 5);
        ASSERT_TRUE(dev->dumpFile(file).ok());
        ASSERT_TRUE(dev->finishDump(true).ok());
    }
    TestMachine dst(machineSpec(2));
    testsupport::LoopbackHandoff handoff([&](int fd) { return dst.kernel->dup(fd); });
    auto main = dst.device(store.get());
    auto worker = testsupport::parallelRestoreOn(*main, 1 << 20);
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
    dev->setContentHandoff(&handoff);
    ASSERT_TRUE(dev->restoreFile(5).ok());
    worker->start(handoff.source());
    ASSERT_TRUE(worker->finish().ok());
    auto resumed = dev->resumeProcess(121);
    ASSERT_TRUE(resumed.ok()) << resumed.error().describe();
}

TEST(KfdFaultOrder, GivenAContentCopyFailureInParallelRestore_ThenTheWorkerNamesTheGpuAndTheBo) {
    TestMachine src(machineSpec(2));
    src.kernel->addProcess(130, twoGpuProcess());
    src.kernel->seize(130);
    auto store = formats::openDirectoryStore(src.dir / "").value();
    {
        auto dev = src.device(store.get());
        hal::FileRef file = src.fileRef(130, 3, 5);
        ASSERT_TRUE(dev->dumpFile(file).ok());
        ASSERT_TRUE(dev->finishDump(true).ok());
    }
    TestMachine dst(machineSpec(2));
    testsupport::LoopbackHandoff handoff([&](int fd) { return dst.kernel->dup(fd); });
    auto main = dst.device(store.get());
    auto worker = testsupport::parallelRestoreOn(*main, 1 << 20);
    dst.kernel->setCurrentPid(131);
    auto dev = dst.device(store.get());
    dev->setContentHandoff(&handoff);
    ASSERT_TRUE(dev->restoreFile(5).ok());
    size_t fdsAfterRestore = dst.kernel->openFdCount();
    dst.kernel->failCall("submitSdma", EIO, 2);
    worker->start(handoff.source());
    auto finished = worker->finish();
    ASSERT_FALSE(finished.ok());
    std::string e = finished.error().describe();
    EXPECT_THAT(e, HasSubstr("amdgpu_cs_submit"));
    EXPECT_THAT(e, ::testing::ContainsRegex("BO [0-9]+ \\((VRAM|GTT)"));
    EXPECT_THAT(e, ::testing::ContainsRegex("GPU 0x1[01]{3}"));
    EXPECT_THAT(e, HasSubstr("amdgpu-pages-5-"));
    EXPECT_LE(dst.kernel->openFdCount(), fdsAfterRestore) << "the jobs' dmabuf fds are closed";
    EXPECT_TRUE(dev->finishRestore(false).ok());
}

class RestoreFault : public ::testing::TestWithParam<Case> {};

TEST_P(RestoreFault, GivenAFailingCall_WhenRestoring_ThenTheErrorNamesTheStep) {
    const Case& c = GetParam();
    TestMachine src(machineSpec(2));
    src.kernel->addProcess(140, twoGpuProcess());
    src.kernel->seize(140);
    auto store = formats::openDirectoryStore(src.dir / "").value();
    {
        auto dev = src.device(store.get());
        hal::FileRef file = src.fileRef(140, 3, 5);
        ASSERT_TRUE(dev->dumpFile(file).ok());
        ASSERT_TRUE(dev->finishDump(true).ok());
    }
    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(141);
    auto dev = dst.device(store.get());
    dst.kernel->failCall(c.call, c.err, c.nth);
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
                      // The first open probes the GPU's render node (is it this process's?).
                      Case{"open", EPERM, "can open only 0x1111 (renderD129) of the 2 GPUs", 1},
                      Case{"open", ENOENT, "cannot open", 3},
                      Case{"boImportDmabuf", EINVAL, "amdgpu_bo_import"},
                      Case{"submitSdma", ENOMEM, "amdgpu_cs_submit"},
                      Case{"waitFence", ECANCELED, "amdgpu_cs_query_fence_status"},
                      Case{"open", EACCES, "cannot open /fakedev/kfd", 5},
                      Case{"boListCreate", ENOMEM, "amdgpu_bo_list_create"}),
    [](const auto& info) {
        std::string n = info.param.call;
        n.erase(std::remove_if(n.begin(), n.end(), [](char ch) { return !isalnum(ch); }), n.end());
        return n + std::to_string(info.param.nth);
    });

TEST(KfdFaultOrder, GivenResumeFails_ThenTheErrorSaysResume) {
    TestMachine src(machineSpec(1));
    ProcessSpec spec;
    spec.bos = {{0, 4096, kVram}};
    src.kernel->addProcess(150, spec);
    src.kernel->seize(150);
    auto store = formats::openDirectoryStore(src.dir / "").value();
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

TEST(KfdFakeKernel, GivenCriuOpsOutOfOrder_ThenTheyFailAsTheKernelDoes) {
    TestMachine m(machineSpec(1));
    ProcessSpec spec;
    spec.bos = {{0, 4096, kVram}};
    m.kernel->addProcess(161, spec);
    m.kernel->seize(161);
    int copy = m.kernel->criuCopyOf(161, 3);
    auto early = kfd::criuCheckpoint(*m.kernel, copy, {1, 1, 1, 0, 0});
    ASSERT_FALSE(early.ok()) << "CHECKPOINT needs PROCESS_INFO first";
    EXPECT_EQ(early.error().sysErrno(), EINVAL);
    EXPECT_FALSE(kfd::criuUnpause(*m.kernel, copy).ok()) << "UNPAUSE of a process not paused";
    auto info = kfd::criuProcessInfo(*m.kernel, copy);
    ASSERT_TRUE(info.ok());
    kfd::ProcessInfo wrong = info.value();
    wrong.numBos += 1;
    EXPECT_FALSE(kfd::criuCheckpoint(*m.kernel, copy, wrong).ok()) << "num_bos must match";
    EXPECT_TRUE(kfd::criuUnpause(*m.kernel, copy).ok());
    auto resume = kfd::criuResume(*m.kernel, copy, 161);
    EXPECT_FALSE(resume.ok()) << "RESUME only after RESTORE";
    auto gone = kfd::criuResume(*m.kernel, copy, 99999);
    ASSERT_TRUE(gone.ok());
    EXPECT_FALSE(gone.value()) << "ESRCH: not ours";
    m.kernel->release(161);
    auto untraced = kfd::criuProcessInfo(*m.kernel, copy);
    ASSERT_FALSE(untraced.ok());
    EXPECT_EQ(untraced.error().sysErrno(), EBADF);
    EXPECT_NE(untraced.error().describe().find("seized"), std::string::npos);
    m.kernel->close(copy);
}

TEST(KfdFakeKernel, GivenAnUntracedProcess_WhenPausing_ThenPidfdGetfdIsRefused) {
    TestMachine m(machineSpec(1));
    m.kernel->addProcess(162, {});
    auto store = formats::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    auto r = dev->pauseProcess(162);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("pidfd_getfd"), std::string::npos);
}

namespace {

/// Dumps a two-GPU process into `store` as file id 5.
void dumpTwoGpus(TestMachine& src, formats::ImageStore& store, int pid) {
    src.kernel->addProcess(pid, twoGpuProcess());
    src.kernel->seize(pid);
    auto dev = src.device(&store);
    hal::FileRef file = src.fileRef(pid, 3, 5);
    ASSERT_TRUE(dev->dumpFile(file).ok());
    hal::FileRef render = src.fileRef(pid, 4, 6);
    ASSERT_TRUE(dev->dumpFile(render).ok());
    ASSERT_TRUE(dev->finishDump(true).ok());
}

/// An image store whose readers cannot tell their size (like criu's image streamer).
class StreamLikeStore : public formats::ImageStore {
public:
    explicit StreamLikeStore(formats::ImageStore& inner) : inner_(inner) {}
    base::Result<std::unique_ptr<formats::ImageWriter>> openWrite(const std::string& n) override {
        return inner_.openWrite(n);
    }
    base::Result<std::unique_ptr<formats::ImageReader>> openRead(const std::string& n) override {
        HAL_TRY_ASSIGN(auto r, inner_.openRead(n));
        return std::unique_ptr<formats::ImageReader>(new Reader(std::move(r)));
    }
    bool exists(const std::string& n) override { return inner_.exists(n); }
    std::string describe() const override { return "stream"; }

private:
    struct Reader : formats::ImageReader {
        explicit Reader(std::unique_ptr<formats::ImageReader> r) : r_(std::move(r)) {}
        base::Result<void> readExact(std::span<std::byte> out) override {
            return r_->readExact(out);
        }
        int64_t size() const override { return -1; }
        const std::string& name() const override { return r_->name(); }
        std::unique_ptr<formats::ImageReader> r_;
    };
    formats::ImageStore& inner_;
};

} // namespace

TEST(KfdRestoreEdges, GivenAStreamedCorruptPagesFile_ThenTheCopyDetectsTheChecksumMismatch) {
    TestMachine src(machineSpec(2));
    auto dirStore = formats::openDirectoryStore(src.dir / "").value();
    dumpTwoGpus(src, *dirStore, 170);
    std::string path = src.dir / "amdgpu-pages-5-1111.img";
    std::string bytes = testsupport::readFile(path);
    bytes[100] ^= 1;
    testsupport::writeFile(path, bytes);
    StreamLikeStore stream(*dirStore);
    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(171);
    auto dev = dst.device(&stream);
    auto r = dev->restoreFile(5);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("amdgpu-pages-5-1111.img is corrupt"));
}

TEST(KfdRestoreEdges, GivenARenderNodeFirstWithATopologyImage_ThenItIsMappedOntoTheNewMachine) {
    TestMachine src(machineSpec(2));
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dumpTwoGpus(src, *store, 172);
    ASSERT_TRUE(formats::writeTopologyImage(*store, src.topology).ok());
    TestMachine dst(machineSpec(2, 0x4000, 160));
    dst.kernel->setCurrentPid(173);
    auto dev = dst.device(store.get());
    auto fd = dev->restoreFile(6);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    struct stat st;
    ASSERT_EQ(0, dst.kernel->fstat(fd.value(), &st));
    EXPECT_GE(minor(st.st_rdev), 160u);
}

TEST(KfdRestoreEdges, GivenARenderNodeFirstOfAnUnknownGpu_ThenThereIsNoMapping) {
    TestMachine src(machineSpec(2));
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dumpTwoGpus(src, *store, 174);
    TestMachine dst(machineSpec(2, 0x4000, 160));
    auto dev = dst.device(store.get());
    auto fd = dev->restoreFile(6);
    ASSERT_FALSE(fd.ok());
    EXPECT_THAT(fd.error().describe(), HasSubstr("no GPU of this machine for the render node"));
}

TEST(KfdRestoreEdges, GivenDupFailures_ThenRenderNodesAndVmasReportThem) {
    TestMachine src(machineSpec(2));
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dumpTwoGpus(src, *store, 175);
    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(176);
    auto dev = dst.device(store.get());
    ASSERT_TRUE(dev->restoreFile(5).ok());
    dst.kernel->failCall("dup", EMFILE);
    EXPECT_FALSE(dev->restoreFile(6).ok());
    FakeProcess* before = src.kernel->process(175);
    hal::VmaQuery q;
    q.path = "/dev/dri/renderD128";
    q.addr = before->bos[0]->addr;
    q.oldPgoff = before->bos[0]->mmapOffset;
    auto dev2 = dst.device(store.get());
    dst.kernel->setCurrentPid(177);
    ASSERT_TRUE(dev2->restoreFile(5).ok());
    dst.kernel->failCall("dup", EMFILE);
    auto a = dev2->updateVmaMap(q);
    ASSERT_FALSE(a.ok());
    EXPECT_THAT(a.error().describe(), HasSubstr("dup of the device fd"));
    dst.kernel->failCall("open", EACCES);
    auto resumed = dev2->resumeProcess(177);
    ASSERT_FALSE(resumed.ok());
    EXPECT_THAT(resumed.error().describe(), HasSubstr("cannot open /fakedev/kfd"));
}

TEST(KfdRestoreEdges, GivenAHungSdmaEngine_ThenTheCopyTimesOutWithAMessage) {
    TestMachine src(machineSpec(1));
    ProcessSpec spec;
    spec.bos = {{0, 8192, kVram}};
    src.kernel->addProcess(178, spec);
    src.kernel->seize(178);
    src.kernel->hangSdma(true);
    auto store = formats::openDirectoryStore(src.dir / "").value();
    auto dev = src.device(store.get());
    hal::FileRef file = src.fileRef(178, 3, 5);
    auto r = dev->dumpFile(file);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("did not complete"));
    EXPECT_FALSE(src.kernel->process(178)->paused);
}

TEST(KfdDumpEdges, GivenAGpuHiddenFromTheProcess_ThenItIsLeftOutOfTheImage) {
    TestMachine src(machineSpec(2));
    ProcessSpec spec;
    spec.hiddenGpus = {0};
    spec.bos = {{1, 8192, kVram}};
    src.kernel->addProcess(180, spec);
    src.kernel->seize(180);
    auto store = formats::openDirectoryStore(src.dir / "").value();
    auto dev = src.device(store.get());
    hal::FileRef file = src.fileRef(180, 3, 5);
    ASSERT_TRUE(dev->dumpFile(file).ok());
    ASSERT_TRUE(dev->finishDump(true).ok());
    auto image = kfd::readKfdImage(*store, formats::kfdImageName(5));
    ASSERT_TRUE(image.ok());
    EXPECT_EQ(image->topology.gpus().size(), 1u);
    EXPECT_EQ(image->topology.findGpu(0x1000), nullptr);
}

TEST(KfdDumpEdges, GivenAKfdFileWithoutGpus_ThenThereIsNothingToCheckpoint) {
    TestMachine src(machineSpec(1));
    ProcessSpec spec;
    spec.hiddenGpus = {0};
    src.kernel->addProcess(181, spec);
    src.kernel->seize(181);
    auto store = formats::openDirectoryStore(src.dir / "").value();
    auto dev = src.device(store.get());
    auto paused = dev->pauseProcess(181);
    ASSERT_TRUE(paused.ok());
    EXPECT_FALSE(paused.value());
    EXPECT_FALSE(dev->pauseProcess(999).ok()) << "no such task";
}

TEST(KfdDumpEdges, GivenAnImagelessMachineTopology_ThenCheckpointNamesTheMissingGpu) {
    TestMachine src(machineSpec(2));
    src.kernel->addProcess(182, twoGpuProcess());
    src.kernel->seize(182);
    // This machine's sysfs shows one GPU only, but the process uses two.
    TestMachine small(machineSpec(1));
    src.settings.kfdSysfsRoot = small.settings.kfdSysfsRoot;
    auto store = formats::openDirectoryStore(src.dir / "").value();
    auto dev = src.device(store.get());
    hal::FileRef file = src.fileRef(182, 3, 5);
    auto r = dev->dumpFile(file);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(),
                HasSubstr("GPU 0x1111 of process 182 is not in this machine"));
    EXPECT_FALSE(src.kernel->process(182)->paused);
}
