// The staging bound: 256 MiB of VRAM through a 4 MiB buffer, host memory measured.
#include "kfd_steps.h"
#include "kfd_test_machine.h"
#include "loopback_handoff.h"

#include "formats/chunk_map.h"
#include "hal/bo_contents.h"
#include "kfd/bo_transfer.h"

#include <gtest/gtest.h>

using namespace fakekfd;

namespace {

constexpr uint64_t MiB = 1ull << 20;

void dumpAndRestore(TestMachine& src, TestMachine& dst, int pid, formats::ImageStore& store) {
    src.kernel->seize(pid);
    auto dev = src.device(&store);
    hal::FileRef file = src.fileRef(pid, 3, 5);
    auto r = dev->dumpFile(file);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_TRUE(dev->finishDump(true).ok());
    dst.kernel->setCurrentPid(pid + 1);
    auto rdev = dst.device(&store);
    auto fd = rdev->restoreFile(5);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    ASSERT_TRUE(rdev->resumeProcess(pid + 1).value());
}

} // namespace

TEST(KfdStaging, Given256MiBOfVramAnd4MiBBuffer_WhenDumpedAndRestored_ThenHostMemoryStaysBounded) {
    TestMachine src(machineSpec(1));
    src.settings.maxBufferSize = 4 * MiB;
    src.kernel->sampleRss(true);
    ProcessSpec spec;
    for (int i = 0; i < 4; ++i)
        spec.bos.push_back({0, 64 * MiB - 4096 * static_cast<uint64_t>(i), kVram, true});
    spec.bos.push_back({0, 256 * MiB - (4 * 64 * MiB - 6 * 4096), kGtt, true});
    src.kernel->addProcess(400, spec);
    auto store = formats::openDirectoryStore(src.dir / "").value();

    TestMachine dst(machineSpec(1));
    dst.settings.maxBufferSize = 4 * MiB;
    dst.kernel->sampleRss(true);
    uint64_t rssBefore = currentRss();
    dumpAndRestore(src, dst, 400, *store);

    uint64_t total = 0;
    for (const auto& bo : src.kernel->process(400)->bos)
        total += bo->size;
    EXPECT_EQ(total, 256 * MiB);
    // The backend registers exactly the configured buffer with the GPU, never more.
    EXPECT_LE(src.kernel->largestUserptr(), 4 * MiB);
    EXPECT_LE(src.kernel->peakUserptrBytes(), 4 * MiB);
    EXPECT_LE(dst.kernel->peakUserptrBytes(), 4 * MiB);
    // Resident memory while copying: the buffer plus bookkeeping, nothing near 256 MiB.
    uint64_t peak = std::max(src.kernel->peakRss(), dst.kernel->peakRss());
    EXPECT_LT(peak, rssBefore + 24 * MiB) << "RSS grew by " << (peak - rssBefore) / MiB << " MiB";
    EXPECT_GE(src.kernel->copyPackets(), 128u) << "256 MiB in packets of at most 2 MiB";
    for (const auto& bo : dst.kernel->process(401)->bos) {
        EXPECT_EQ(bo->patternBytesWritten, bo->size);
        EXPECT_EQ(bo->patternMismatches, 0u);
    }
    EXPECT_TRUE(src.kernel->gpuFaults().empty());
    EXPECT_TRUE(dst.kernel->gpuFaults().empty());
}

TEST(KfdStaging, GivenFourGpus_ThenTheBudgetIsSharedBetweenTheirWorkers) {
    TestMachine src(machineSpec(4));
    src.settings.maxBufferSize = 8 * MiB;
    ProcessSpec spec;
    for (int g = 0; g < 4; ++g)
        spec.bos.push_back({g, 16 * MiB, kVram, true});
    src.kernel->addProcess(410, spec);
    auto store = formats::openDirectoryStore(src.dir / "").value();
    TestMachine dst(machineSpec(4));
    dst.settings.maxBufferSize = 8 * MiB;
    dumpAndRestore(src, dst, 410, *store);
    EXPECT_LE(src.kernel->largestUserptr(), 2 * MiB);
    EXPECT_LE(src.kernel->peakUserptrBytes(), 8 * MiB);
    EXPECT_LE(dst.kernel->peakUserptrBytes(), 8 * MiB);
}

TEST(KfdStaging, GivenBudgets_ThenEachWorkerGetsTwoWholePagesAtLeast) {
    EXPECT_EQ(kfd::stagingPerWorker(64 * MiB, 1), 64 * MiB);
    EXPECT_EQ(kfd::stagingPerWorker(64 * MiB, 3), 22364160u);
    EXPECT_EQ(kfd::stagingPerWorker(1000, 8), 8192u);
    EXPECT_EQ(kfd::stagingPerWorker(64 * MiB, 0), 64 * MiB);
}

TEST(KfdStaging, GivenAJobSmallerThanItsShare_ThenItsStagingIsTheJobInWholeChunksPerSlot) {
    const uint64_t unit = hal::kLaneSlots * formats::kDefaultIncrementChunk; // 8 MiB
    std::vector<uint64_t> sizes(16, 1 * MiB);
    EXPECT_EQ(hal::laneStagingBytes(64 * MiB, sizes, false), 16 * MiB);
    sizes.push_back(4096);
    EXPECT_EQ(hal::laneStagingBytes(64 * MiB, sizes, false), 16 * MiB + unit);
    EXPECT_EQ(hal::laneStagingBytes(4 * MiB, sizes, false), 4 * MiB) << "never more than the share";
    EXPECT_EQ(hal::laneStagingBytes(20 * MiB, sizes, false), 20 * MiB)
        << "never more than the share";
    sizes.push_back(~0ull);
    EXPECT_EQ(hal::laneStagingBytes(64 * MiB, sizes, false), 64 * MiB)
        << "sizes that overflow: the share";
    EXPECT_EQ(hal::laneStagingBytes(64 * MiB, {}, false), unit) << "one chunk per slot";
    EXPECT_EQ(hal::laneStagingBytes(8192, {}, false), hal::kLaneSlots * 4096u)
        << "a page per slot at least";
}

TEST(KfdStaging, GivenAPagesFileDumpOfSmallBos_ThenItsSlotsAreAnEighthOfTheLargestBo) {
    std::vector<uint64_t> sizes(16, 1 * MiB);
    EXPECT_EQ(hal::laneStagingBytes(64 * MiB, sizes, true), 1 * MiB) << "four slots of 256 KiB";
    sizes.push_back(8 * MiB + 4096);
    EXPECT_EQ(hal::laneStagingBytes(64 * MiB, sizes, true), 4 * MiB + 4 * 4096)
        << "four slots of an eighth of the largest BO, in whole pages";
    EXPECT_EQ(hal::laneStagingBytes(2 * MiB, sizes, true), 2 * MiB) << "never more than the share";
    EXPECT_EQ(hal::laneStagingBytes(64 * MiB, std::vector<uint64_t>{4096}, true),
              hal::kLaneSlots * hal::kMinPagesSlot);
    EXPECT_EQ(hal::laneStagingBytes(64 * MiB, std::vector<uint64_t>{1024 * MiB}, true), 64 * MiB)
        << "large BOs: the whole share";
}

TEST(KfdStaging, GivenSixteenMiBOfBosAndTheDefaultBudget_ThenTheDumpAndTheRestoreRegisterOneMiB) {
    TestMachine src(machineSpec(1));
    ProcessSpec spec;
    for (int i = 0; i < 16; ++i)
        spec.bos.push_back({0, 1 * MiB, kVram, true});
    src.kernel->addProcess(420, spec);
    auto store = formats::openDirectoryStore(src.dir / "").value();
    TestMachine dst(machineSpec(1));
    dumpAndRestore(src, dst, 420, *store);
    // The 64 MiB default budget is what a larger job may use; this one's dump and restore (of a
    // pages file) register four slots of 256 KiB (an eighth of a 1 MiB BO is less).
    EXPECT_EQ(src.kernel->largestUserptr(), 1 * MiB);
    EXPECT_EQ(dst.kernel->largestUserptr(), 1 * MiB);
    for (const auto& bo : dst.kernel->process(421)->bos) {
        EXPECT_EQ(bo->patternBytesWritten, bo->size);
        EXPECT_EQ(bo->patternMismatches, 0u);
    }
}

TEST(KfdStaging,
     GivenParallelRestoreWith64MiBOfStaging_WhenSixteenMiBOfBosAreRestored_ThenOneMiBIsRegistered) {
    TestMachine src(machineSpec(1));
    ProcessSpec spec;
    for (int i = 0; i < 16; ++i)
        spec.bos.push_back({0, 1 * MiB, kVram, true});
    FakeProcess& p = src.kernel->addProcess(430, spec);
    auto store = formats::openDirectoryStore(src.dir / "").value();
    dump(src, *store, 430, true);
    TestMachine dst(machineSpec(1));
    testsupport::LoopbackHandoff handoff([&](int fd) { return dst.kernel->dup(fd); });
    auto main = dst.device(store.get()); // criu's main process, with the default budget
    auto worker = testsupport::parallelRestoreOn(*main, 64 * MiB);
    worker->start(handoff.source());
    dst.kernel->setCurrentPid(431);
    auto task = dst.device(store.get());
    task->setContentHandoff(&handoff);
    ASSERT_TRUE(task->restoreFile(kKfdFileId).ok());
    auto finished = worker->finish();
    ASSERT_TRUE(finished.ok()) << finished.error().describe();
    // The lane takes of the worker's 64 MiB what a pages file of 1 MiB BOs needs: four slots of
    // 256 KiB, registered with the GPU; the rest is never touched.
    EXPECT_EQ(dst.kernel->largestUserptr(), 1 * MiB);
    ASSERT_TRUE(task->resumeProcess(431).value());
    FakeProcess* q = dst.kernel->process(431);
    ASSERT_NE(q, nullptr);
    expectSameBos(p, *q);
}
