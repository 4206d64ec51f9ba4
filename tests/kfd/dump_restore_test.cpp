// End to end: a fake process is dumped by the real backend code into images in a temporary
// directory, and restored from them on the same or another (fake) machine.
#include "kfd_steps.h"
#include "kfd_test_machine.h"
#include "loopback_handoff.h"
#include "sparse_files.h"

#include "formats/proto_image.h"
#include "kfd/kfd_images.h"

#include <gtest/gtest.h>

#include <semaphore.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>

using namespace fakekfd;

TEST(KfdDumpRestore, GivenTwoGpusWithEveryBoKind_WhenDumpedAndRestored_ThenContentsAndStateMatch) {
    TestMachine src(machineSpec(2));
    FakeProcess& p = src.kernel->addProcess(500, everyKindOfBo(2));
    auto store = formats::openDirectoryStore(src.dir / "").value().release();
    std::unique_ptr<formats::ImageStore> own(store);
    size_t fdsBefore = src.kernel->openFdCount();
    dump(src, *store, 500, true);
    EXPECT_EQ(src.kernel->openFdCount(), fdsBefore) << "the dump leaked fds (dmabufs?)";
    EXPECT_EQ(src.kernel->liveDrmObjects(), 0u);
    EXPECT_TRUE(src.kernel->gpuFaults().empty());

    TestMachine dst(machineSpec(2));
    Restored r = restore(dst, *store, 777, 2);
    ASSERT_GE(r.kfdFd, 0);
    FakeProcess* q = dst.kernel->process(777);
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(q->restored);
    expectSameBos(p, *q);
    auto resumed = r.dev->resumeProcess(777);
    ASSERT_TRUE(resumed.ok()) << resumed.error().describe();
    EXPECT_TRUE(resumed.value());
    EXPECT_TRUE(q->resumed);
    EXPECT_EQ(q->evictions, 0);
    EXPECT_TRUE(r.dev->finishRestore(true).ok());
    EXPECT_EQ(dst.kernel->liveDrmObjects(), 0u);
    EXPECT_TRUE(dst.kernel->gpuFaults().empty());
}

/// Bytes the file system allocated for `path`.
int64_t allocatedBytes(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_blocks) * 512 : -1;
}

/// A process with one VRAM BO of 4 MiB whose middle 3 MiB are zeros, dumped with `holes`; the
/// bytes the pages file allocated.
int64_t dumpHalfZeroBo(bool holes, TestMachine& src, formats::ImageStore& store) {
    src.settings.contentHoles = holes;
    ProcessSpec spec;
    spec.bos.push_back({0, 4 << 20, kVram});
    FakeProcess& p = src.kernel->addProcess(520, spec);
    std::fill(p.bos[0]->data.begin() + (512 << 10), p.bos[0]->data.end() - (512 << 10),
              std::byte{0});
    dump(src, store, 520, true);
    return allocatedBytes(src.dir / formats::kfdPagesImageName(kKfdFileId, 0x1000));
}

TEST(KfdDumpRestore, GivenZeroBlocks_WhenDumped_ThenThePagesFileHasHolesUnlessContentHolesIsOff) {
    TestMachine sparse(machineSpec(1)), full(machineSpec(1));
    // Whether holes can appear is the file system's answer, asked before the dump: a backend
    // that writes no holes must fail here, not skip.
    if (!haltest::holesSupported(sparse.dir.path()))
        GTEST_SKIP() << "the file system of " << sparse.dir.path() << " keeps no holes";
    auto sparseStore = formats::openDirectoryStore(sparse.dir / "").value();
    auto fullStore = formats::openDirectoryStore(full.dir / "").value();
    int64_t withHoles = dumpHalfZeroBo(true, sparse, *sparseStore);
    int64_t without = dumpHalfZeroBo(false, full, *fullStore);
    EXPECT_GE(without, 4 << 20);
    EXPECT_LE(withHoles, (1 << 20) + 2 * 4096);
    EXPECT_EQ(testsupport::readFile(sparse.dir / formats::kfdPagesImageName(kKfdFileId, 0x1000)),
              testsupport::readFile(full.dir / formats::kfdPagesImageName(kKfdFileId, 0x1000)));

    TestMachine dst(machineSpec(1));
    Restored r = restore(dst, *sparseStore, 521, 1);
    ASSERT_GE(r.kfdFd, 0);
    expectSameBos(*sparse.kernel->process(520), *dst.kernel->process(521));
}

TEST(KfdDumpRestore,
     GivenOldCriuWithoutPauseHooks_WhenOnlyFilesAreDumped_ThenTheKfdFileFindsItsProcess) {
    TestMachine m(machineSpec(1));
    FakeProcess& p = m.kernel->addProcess(600, everyKindOfBo(1));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dump(m, *store, 600, false);
    TestMachine dst(machineSpec(1));
    Restored r = restore(dst, *store, 601, 1);
    expectSameBos(p, *dst.kernel->process(601));
}

TEST(KfdDumpRestore, GivenAProcessInAPidNamespace_WhenDumped_ThenTheImageHoldsItsNamespacePid) {
    TestMachine m(machineSpec(1));
    ProcessSpec spec = everyKindOfBo(1);
    spec.nsPid = 7;
    m.kernel->addProcess(650, spec);
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dump(m, *store, 650, true);
    auto image = kfd::readKfdImage(*store, formats::kfdImageName(kKfdFileId));
    ASSERT_TRUE(image.ok());
    EXPECT_EQ(image->pid, 7u);
}

// A mapping of `path` at the BO's address under another offset than the KFD image records for
// it: one of the images was changed after the dump. Answering "not ours" would have criu map the
// recorded path at an offset no restored BO has (e2e.kfd_driver_hostile): refused, naming both
// offsets and the image.
static void expectOtherOffsetRefused(kfd::KfdDevice& dev, const std::string& path,
                                     const FakeBo& bo) {
    hal::VmaQuery query;
    query.path = path;
    query.addr = bo.addr;
    query.oldPgoff = bo.mmapOffset + 0x1000;
    auto changed = dev.updateVmaMap(query);
    ASSERT_FALSE(changed.ok()) << path << " at 0x" << std::hex << bo.addr;
    std::string want = base::strFormat(
        "the mapping at 0x%llx of %s has offset 0x%llx, and %s records the BO mapped there at "
        "offset 0x%llx",
        static_cast<unsigned long long>(bo.addr), path.c_str(),
        static_cast<unsigned long long>(query.oldPgoff), formats::kfdImageName(kKfdFileId).c_str(),
        static_cast<unsigned long long>(bo.mmapOffset));
    EXPECT_NE(changed.error().describe().find(want), std::string::npos)
        << changed.error().describe();
}

TEST(KfdDumpRestore,
     GivenADifferentMachine_WhenRestored_ThenGpusAreRemappedAndVmasPointAtTheNewGpus) {
    TestMachine src(machineSpec(2, 0x1000, 128));
    FakeProcess& p = src.kernel->addProcess(700, everyKindOfBo(2));
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dump(src, *store, 700, true);

    TestMachine dst(machineSpec(2, 0x5000, 140));
    Restored r = restore(dst, *store, 701, 2);
    FakeProcess* q = dst.kernel->process(701);
    ASSERT_NE(q, nullptr);
    expectSameBos(p, *q);
    // The process keeps seeing its checkpointed gpu_ids; the kernel translates to the new GPUs.
    for (const auto& [actual, user] : q->userOfActual) {
        EXPECT_GE(actual, 0x5000u);
        EXPECT_LT(user, 0x5000u);
    }
    for (size_t i = 0; i < p.bos.size(); ++i) {
        const FakeBo& before = *p.bos[i];
        const FakeBo& after = *q->bos[i];
        hal::VmaQuery query;
        query.addr = before.addr;
        query.oldPgoff = before.mmapOffset;
        if (kfd::boHasContents(before.allocFlags)) {
            int srcMinor = 128 + (before.actualGpuId == 0x1000 ? 0 : 1);
            query.path = "/dev/dri/renderD" + std::to_string(srcMinor);
            auto a = r.dev->updateVmaMap(query);
            ASSERT_TRUE(a.ok() && a.value().has_value()) << "BO " << i;
            EXPECT_EQ(a.value()->newPgoff, after.mmapOffset);
            ASSERT_GE(a.value()->fd, 0);
            // The fd to map from is the drm file whose VM the kernel acquired for that GPU.
            EXPECT_EQ(1,
                      dst.kernel->sameFile(a.value()->fd, q->drmFileOfGpu.at(after.actualGpuId)));
            dst.kernel->close(a.value()->fd);
            // The same address and offset on the other GPU's node is not this BO (fault 6).
            query.path = "/dev/dri/renderD" + std::to_string(srcMinor == 128 ? 129 : 128);
            auto other = r.dev->updateVmaMap(query);
            ASSERT_TRUE(other.ok());
            EXPECT_FALSE(other.value().has_value());
            expectOtherOffsetRefused(*r.dev, "/dev/dri/renderD" + std::to_string(srcMinor), before);
        } else if (kfd::boMappedThroughKfd(before.allocFlags)) {
            query.path = "/dev/kfd";
            auto a = r.dev->updateVmaMap(query);
            ASSERT_TRUE(a.ok() && a.value().has_value());
            EXPECT_EQ(a.value()->newPgoff, after.mmapOffset);
            // Mapped through the restored KFD file: criu would open the path of the dumped
            // machine's file (real criu on the user-space KFD driver failed so).
            ASSERT_GE(a.value()->fd, 0);
            EXPECT_EQ(1, dst.kernel->sameFile(a.value()->fd, r.kfdFd));
            dst.kernel->close(a.value()->fd);
            expectOtherOffsetRefused(*r.dev, "/dev/kfd", before);
        }
    }
    hal::VmaQuery notOurs;
    notOurs.path = "/dev/zero";
    auto none = r.dev->updateVmaMap(notOurs);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none.value().has_value());
    EXPECT_TRUE(r.dev->resumeProcess(701).value());
}

TEST(KfdDumpRestore, GivenARestoredProcess_WhenCheckpointedAgain_ThenImagesKeepItsUserGpuIds) {
    TestMachine m(machineSpec(2, 0x2000, 130));
    ProcessSpec spec = everyKindOfBo(2);
    spec.userIds = {{0, 0x1000}, {1, 0x1111}};
    m.kernel->addProcess(800, spec);
    auto store = formats::openDirectoryStore(m.dir / "").value();
    dump(m, *store, 800, true);
    auto image = kfd::readKfdImage(*store, formats::kfdImageName(kKfdFileId));
    ASSERT_TRUE(image.ok()) << image.error().describe();
    ASSERT_NE(image->topology.findGpu(0x1000), nullptr);
    ASSERT_NE(image->topology.findGpu(0x1111), nullptr);
    EXPECT_EQ(image->topology.findGpu(0x2000), nullptr);
    EXPECT_TRUE(store->exists("amdgpu-pages-10-1000.img"));
    EXPECT_TRUE(store->exists("amdgpu-pages-10-1111.img"));
    auto render = formats::readRenderNodeImage(*store, kKfdFileId + 1);
    ASSERT_TRUE(render.ok());
    EXPECT_EQ(render->gpuId, 0x1000u);
}

TEST(
    KfdDumpRestore,
    GivenParallelRestore_WhenFilesAreRestored_ThenCriusMainProcessRestoresTheContentsBeforeResume) {
    TestMachine src(machineSpec(3));
    FakeProcess& p = src.kernel->addProcess(900, everyKindOfBo(3));
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dump(src, *store, 900, true);
    for (uint32_t gpu : {0x1000u, 0x1111u, 0x1222u})
        EXPECT_TRUE(store->exists(formats::kfdPagesImageName(kKfdFileId, gpu)));

    TestMachine dst(machineSpec(3, 0x3000, 150));
    testsupport::LoopbackHandoff handoff([&](int fd) { return dst.kernel->dup(fd); });
    auto main = dst.device(store.get()); // criu's main process
    auto worker = testsupport::parallelRestoreOn(*main, 3 << 20);
    worker->start(handoff.source());
    dst.kernel->setCurrentPid(901);
    auto task = dst.device(store.get()); // the restored task
    task->setContentHandoff(&handoff);
    ASSERT_TRUE(task->restoreFile(kKfdFileId).ok());
    EXPECT_EQ(handoff.sent(), 3u) << "one job per GPU";
    for (unsigned g = 0; g < 3; ++g)
        ASSERT_TRUE(task->restoreFile(kKfdFileId + 1 + g).ok());

    auto finished = worker->finish();

    ASSERT_TRUE(finished.ok()) << finished.error().describe();
    EXPECT_EQ(worker->jobsRun(), 3u);
    EXPECT_LE(worker->peakStagingBytes(), 3u << 20);
    FakeProcess* q = dst.kernel->process(901);
    ASSERT_NE(q, nullptr);
    EXPECT_FALSE(q->resumed);
    auto resumed = task->resumeProcess(901);
    ASSERT_TRUE(resumed.ok()) << resumed.error().describe();
    expectSameBos(p, *q);
    EXPECT_TRUE(q->resumed);
}

TEST(KfdDumpRestore, GivenParallelRestore_WhenTheTaskHandsOver_ThenNoContentIsCopiedInTheTask) {
    TestMachine src(machineSpec(2));
    src.kernel->addProcess(950, everyKindOfBo(2));
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dump(src, *store, 950, true);
    TestMachine dst(machineSpec(2));
    testsupport::LoopbackHandoff handoff([&](int fd) { return dst.kernel->dup(fd); });
    dst.kernel->setCurrentPid(951);
    auto task = dst.device(store.get());
    task->setContentHandoff(&handoff);
    size_t fdsBefore = dst.kernel->openFdCount();
    ASSERT_TRUE(task->restoreFile(kKfdFileId).ok());
    FakeProcess* q = dst.kernel->process(951);
    ASSERT_NE(q, nullptr);
    EXPECT_TRUE(std::all_of(q->bos[0]->data.begin(), q->bos[0]->data.end(), [](std::byte b) {
        return b == std::byte{0};
    })) << "contents were written in the task";
    EXPECT_EQ(dst.kernel->copyPackets(), 0u);
    auto source = handoff.source();
    auto main = dst.device(store.get());
    for (;;) { // drop the jobs, as a worker does after a failure
        ASSERT_TRUE(source->stop().ok());
        auto job = source->next();
        ASSERT_TRUE(job.ok());
        if (!job.value())
            break;
        main->discardHandedContents(**job);
    }
    // The KFD fd criu got, the copy of it and the render fds the restore keeps (for the
    // mappings) are all that is left open.
    EXPECT_LE(dst.kernel->openFdCount(), fdsBefore + 2 + 2);
}

TEST(KfdDumpRestore,
     GivenLibhsakmtSharedMemory_WhenDumpedAndRestored_ThenSegmentAndSemaphoreAreRecreated) {
    TestMachine src(machineSpec(1));
    src.kernel->addProcess(960, everyKindOfBo(1));
    std::string seg(8192, '\0');
    uint32_t magic = 0x4b4d5348;
    memcpy(seg.data(), &magic, 4);
    testsupport::writeFile(kfd::processShmDir(src.procRoot, 960) + "/hsakmt_shared_mem", seg);
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dump(src, *store, 960, true);
    TestMachine dst(machineSpec(1));
    Restored r = restore(dst, *store, 961, 0);
    std::string restored = testsupport::readFile(dst.shmDir + "/hsakmt_shared_mem");
    ASSERT_EQ(restored.size(), 8192u);
    EXPECT_EQ(0, memcmp(restored.data(), &magic, 4));
    EXPECT_EQ(testsupport::readFile(dst.shmDir + "/sem.hsakmt_semaphore").size(), sizeof(sem_t));
}

// criu's /dev/shm is the host's, where any local user can create hsakmt_shared_mem: a dump
// records the checkpointed process's own segment, resolved within its root.
TEST(KfdDumpRestore, GivenASegmentOnlyInCriusDevShm_WhenDumped_ThenTheProcessHasNoneRecorded) {
    TestMachine src(machineSpec(1));
    src.kernel->addProcess(960, everyKindOfBo(1));
    testsupport::writeFile(src.shmDir + "/hsakmt_shared_mem", std::string(8192, 'x'));
    std::filesystem::create_directories(kfd::processShmDir(src.procRoot, 960));
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dump(src, *store, 960, true);
    TestMachine dst(machineSpec(1));
    Restored r = restore(dst, *store, 961, 0);
    EXPECT_FALSE(std::filesystem::exists(dst.shmDir + "/hsakmt_shared_mem"));
}

TEST(KfdDumpRestore, GivenTheProcessesDevShmALinkOutOfItsRoot_WhenDumped_ThenItStaysInItsRoot) {
    TestMachine src(machineSpec(1));
    src.kernel->addProcess(960, everyKindOfBo(1));
    // The process's /dev/shm links to the absolute /host: resolved in its root, not criu's.
    std::string root = src.procRoot + "/960/root";
    std::filesystem::create_directories(root + "/dev");
    std::filesystem::create_directories(root + "/host");
    std::filesystem::create_directory_symlink("/host", root + "/dev/shm");
    std::string seg(4096, '\0');
    uint32_t magic = 0x4b4d5348;
    memcpy(seg.data(), &magic, 4);
    testsupport::writeFile(root + "/host/hsakmt_shared_mem", seg);
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dump(src, *store, 960, true);
    TestMachine dst(machineSpec(1));
    Restored r = restore(dst, *store, 961, 0);
    EXPECT_EQ(testsupport::readFile(dst.shmDir + "/hsakmt_shared_mem").size(), 4096u);
}

TEST(KfdDumpRestore, GivenAPidWithoutKfdState_WhenResumed_ThenItIsNotOurs) {
    TestMachine m(machineSpec(1));
    auto store = formats::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    auto r = dev->resumeProcess(4242);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_FALSE(r.value());
}

TEST(KfdDumpRestore, GivenATaskWithoutKfd_WhenPaused_ThenItIsNotOurs) {
    TestMachine m(machineSpec(1));
    m.kernel->addPlainTask(300, {m.kernel->renderPath(128)});
    m.kernel->seize(300);
    auto store = formats::openDirectoryStore(m.dir / "").value();
    auto dev = m.device(store.get());
    auto r = dev->pauseProcess(300);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_FALSE(r.value());
}

TEST(KfdDumpRestore,
     GivenARenderNodeRestoredBeforeItsKfdFile_ThenTheSameGpuIsOpenedAndSharedWithRestore) {
    TestMachine src(machineSpec(1));
    src.kernel->addProcess(970, everyKindOfBo(1));
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dump(src, *store, 970, true);
    TestMachine dst(machineSpec(1));
    dst.kernel->setCurrentPid(971);
    auto dev = dst.device(store.get());
    auto render = dev->restoreFile(kKfdFileId + 1);
    ASSERT_TRUE(render.ok()) << render.error().describe();
    auto kfdFd = dev->restoreFile(kKfdFileId);
    ASSERT_TRUE(kfdFd.ok()) << kfdFd.error().describe();
    FakeProcess* q = dst.kernel->process(971);
    EXPECT_EQ(1, dst.kernel->sameFile(render.value(), q->drmFileOfGpu.at(0x1000)));
}

// A container given some of the node's GPUs (AMD's device plugin: /dev/kfd and one render node
// per GPU, while sysfs lists them all): the restore maps onto the GPUs whose render node it has.
/// Dumps a process of two GPUs and restores it onto a machine of four (gpu_ids 0x5000..., render
/// minors 140...) whose pod `givePod` sets up: expects it on the last two GPUs, resumed, and puts
/// the paths of the nodes the restore made in `made`.
static void restoreOntoTheLastTwoOfFour(const std::function<void(FakeKernel&)>& givePod,
                                        std::set<std::string>* made) {
    TestMachine src(machineSpec(2, 0x1000, 128));
    FakeProcess& p = src.kernel->addProcess(700, everyKindOfBo(2));
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dump(src, *store, 700, true);

    TestMachine dst(machineSpec(4, 0x5000, 140));
    givePod(*dst.kernel);
    Restored r = restore(dst, *store, 701, 2);
    FakeProcess* q = dst.kernel->process(701);
    ASSERT_NE(q, nullptr);
    expectSameBos(p, *q);
    std::set<uint32_t> used;
    for (const auto& bo : q->bos)
        used.insert(bo->actualGpuId);
    EXPECT_EQ(used, (std::set<uint32_t>{0x5222, 0x5333})) << "BOs restored onto a GPU not given";
    for (const auto& [path, minor] : dst.kernel->madeNodes())
        made->insert(path);
    EXPECT_TRUE(r.dev->resumeProcess(701).value());
}

TEST(KfdDumpRestore, GivenAContainerGivenTwoOfFourGpus_WhenRestored_ThenOnlyThoseGpusAreUsed) {
    std::set<std::string> made;
    restoreOntoTheLastTwoOfFour(
        [](FakeKernel& k) {
            k.hideRenderNode(140);
            k.hideRenderNode(141);
        },
        &made);
    EXPECT_TRUE(made.empty()) << "the pod's /dev had the nodes";
}

// A container restored by runc into a new pod: its /dev is the old pod's (the nodes of the GPUs it
// was given, 140 and 141, which the new pod's devices cgroup refuses) and lacks the nodes of the
// GPUs the new pod was given (142 and 143, which the cgroup allows). The restore maps onto the
// new pod's GPUs, found by asking the kernel, and makes their nodes; no probe node is left.
TEST(KfdDumpRestore, GivenTheOldPodsDevAndTheNewPodsCgroup_WhenRestored_ThenTheNewPodsGpusAreUsed) {
    std::set<std::string> made;
    restoreOntoTheLastTwoOfFour(
        [](FakeKernel& k) {
            k.denyRenderNode(140);
            k.denyRenderNode(141);
            k.removeRenderNodeFile(142);
            k.removeRenderNodeFile(143);
        },
        &made);
    EXPECT_EQ(made, (std::set<std::string>{"/fakedev/dri/renderD142", "/fakedev/dri/renderD143"}));
}

/// Dumps a process of two GPUs (every kind of BO) of a machine at 0x1000 and restores it on `dst`
/// as pid 701; returns why the restore was refused ("" when it was not).
std::string refusalOfTwoGpusRestoredOn(TestMachine& dst) {
    TestMachine src(machineSpec(2, 0x1000, 128));
    src.kernel->addProcess(700, everyKindOfBo(2));
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dump(src, *store, 700, true);
    dst.kernel->setCurrentPid(701);
    auto fd = dst.device(store.get())->restoreFile(kKfdFileId);
    return fd.ok() ? "" : fd.error().describe();
}

// force-single-gpu-restore of a process of two GPUs onto a machine of one: KFD's RESTORE takes
// each GPU of a process once (EINVAL for the second on the same GPU), so the restore is refused
// before the kernel is asked for anything, saying why.
TEST(KfdDumpRestore, GivenForceSingleGpuOfTwoGpusOntoOne_WhenRestored_ThenRefusedBeforeTheKernel) {
    TestMachine dst(machineSpec(1, 0x5000, 140));
    dst.settings.forceSingleGpuRestore = true;
    std::string why = refusalOfTwoGpusRestoredOn(dst);
    EXPECT_NE(why.find("would both be restored onto GPU 0x5000 (option force-single-gpu-restore)"),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("KFD restores each GPU of a process once"), std::string::npos) << why;
    EXPECT_EQ(dst.kernel->process(701), nullptr) << "the kernel was asked before the refusal";
}

TEST(KfdDumpRestore, GivenAContainerGivenTooFewGpus_WhenRestored_ThenTheErrorNamesTheMissingNodes) {
    TestMachine dst(machineSpec(2, 0x5000, 140));
    dst.kernel->hideRenderNode(140);
    std::string why = refusalOfTwoGpusRestoredOn(dst);
    EXPECT_NE(why.find("can open only 0x5111 (renderD141)"), std::string::npos) << why;
    EXPECT_NE(why.find("not given the device nodes of 0x5000 (renderD140)"), std::string::npos)
        << why;
    EXPECT_EQ(dst.kernel->process(701), nullptr) << "a GPU was touched before the mapping failed";
}
