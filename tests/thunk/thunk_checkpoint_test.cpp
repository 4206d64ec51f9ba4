// What AMD's thunk made survives a dump and restore by our KFD backend: the process carries on
// with the thunk's own handles, addresses, queue ids, doorbells and event ids, and reads its bytes.
#include "criu_steps.h"
#include "thunk_machine.h"
#include "thunk_workload.h"

#include <gtest/gtest.h>

#include <unistd.h>

using namespace thunkfake;

namespace {

struct BoView {
    uint64_t addr, size;
    uint32_t flags;
    bool operator==(const BoView&) const = default;
};

std::vector<BoView> bosOf(fakekfd::FakeKernel& k) {
    std::vector<BoView> out;
    for (const auto& bo : k.process(getpid())->bos)
        out.push_back({bo->addr, bo->size, bo->allocFlags});
    return out;
}

/// The thunk's process on a machine of gpu_ids from `srcBase`, restored onto one from `dstBase`.
void survivesDumpAndRestore(uint32_t srcBase, uint32_t dstBase) {
    testsupport::TempDir images; // outlives the source machine
    auto src = generatedMachine(2, srcBase);
    auto opened = formats::openDirectoryStore(images / "");
    ASSERT_TRUE(opened.ok()) << opened.error().describe();
    auto store = std::move(opened).value();
    DumpedTask task;
    std::vector<Workload> work(2);
    std::vector<BoView> bosBefore;
    size_t queuesBefore = 0, eventsBefore = 0;
    {
        Installed routes(*src);
        startOnEveryGpu(&work);
        ASSERT_FALSE(::testing::Test::HasFatalFailure());
        bosBefore = bosOf(*src->kernel);
        fakekfd::FakeProcess* p = src->kernel->process(getpid());
        queuesBefore = p->queues.size();
        eventsBefore = p->events.size();
        dumpThisProcess(*src, *store, &task);
        ASSERT_FALSE(::testing::Test::HasFatalFailure());
        EXPECT_TRUE(src->kernel->unservedIoctls().empty());
    }
    dropDeviceVmas(task);
    src.reset(); // the old machine and every byte of its BOs are gone

    auto dst = generatedMachine(2, dstBase);
    dst->kernel->setFirstFd(5000);
    Installed routes(*dst);
    restoreThisProcess(*dst, *store, task);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    fakekfd::FakeProcess* q = dst->kernel->process(getpid());
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(bosOf(*dst->kernel), bosBefore);
    EXPECT_EQ(q->queues.size(), queuesBefore);
    EXPECT_EQ(q->events.size(), eventsBefore);

    expectCarriesOn(work);
    HsaMemFlags f{};
    f.ui32.NonPaged = 1;
    f.ui32.HostAccess = 1;
    void* more = nullptr;
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtAllocMemory(work[0].node, 1 << 20, f, &more));
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtMapMemoryToGPU(more, 1 << 20, nullptr));
    memset(more, 0x5a, 1 << 20);
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtUnmapMemoryToGPU(more));
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtFreeMemory(more, 1 << 20));
    expectStopsCleanly(work, *dst->kernel);
}

} // namespace

TEST(ThunkCheckpoint,
     GivenTheThunksState_WhenDumpedAndRestoredOnTheSameGpuIds_ThenTheProcessCarriesOn) {
    inFreshProcess([] { survivesDumpAndRestore(0x1000, 0x1000); });
}

TEST(ThunkCheckpoint, GivenTheThunksState_WhenRestoredOnOtherGpuIds_ThenTheProcessCarriesOn) {
    inFreshProcess([] { survivesDumpAndRestore(0x1000, 0x7000); });
}
