// CRIU's own amdgpu plugin (Debian's criu 4.1.1, built unmodified by upstream/prepare.sh) and
// ours checkpoint and restore the same process, whose KFD state AMD's thunk made, on the fake
// KFD: upstream dumps and ours restores, ours dumps and upstream restores, upstream does both.
// Each restored process reads its bytes back, finds its signaled event signaled, and uses and
// destroys every queue, event and BO through the thunk's old handles.
#include "criu_steps.h"
#include "thunk_machine.h"
#include "thunk_workload.h"
#include "upstream_plugin.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>

using namespace thunkfake;

namespace {

enum class Plugin { Ours, Upstream };

struct Before {
    std::vector<std::pair<uint64_t, uint64_t>> bos; ///< addr, size
    size_t queues = 0, events = 0;
};

Before stateOf(fakekfd::FakeProcess& p) {
    Before b;
    for (const auto& bo : p.bos)
        b.bos.emplace_back(bo->addr, bo->size);
    b.queues = p.queues.size();
    b.events = p.events.size();
    return b;
}

std::unique_ptr<formats::ImageStore> storeAt(const testsupport::TempDir& dir) {
    auto opened = formats::openDirectoryStore(dir / "");
    EXPECT_TRUE(opened.ok()) << opened.error().describe();
    return opened.ok() ? std::move(opened).value() : nullptr;
}

/// The GPU faults the SDMA copies of `plugin` left on machine `k`. Ours: none. Upstream's (criu
/// 4.1.1 sdma_copy_bo): each COPY_LINEAR packet has the byte count in its count field, where
/// SDMA 4+ takes count - 1 (the kernel's own sdma_v4_0_emit_copy_buffer writes byte_count - 1),
/// so each packet copies one byte past its chunk: the last one of each BO runs one byte outside
/// the mapped buffers, a VM fault that the hardware survives (the byte goes to the dummy page).
void expectFaultsOf(Plugin plugin, fakekfd::FakeKernel& k) {
    std::vector<std::string> faults = k.gpuFaults();
    if (plugin == Plugin::Ours) {
        EXPECT_TRUE(faults.empty()) << faults.front();
        return;
    }
    EXPECT_FALSE(faults.empty()) << "upstream's packets no longer copy one byte too many";
    for (const std::string& f : faults) {
        unsigned long long bytes = 0;
        ASSERT_EQ(1, sscanf(f.c_str(), "COPY_LINEAR of %llu bytes", &bytes)) << f;
        EXPECT_EQ(bytes % 4096, 1u) << f;
    }
}

/// The thunk's process on a machine of gpu_ids from 0x1000 dumped by `dumper`, restored onto one
/// from `dstBase` by `restorer`; it carries on there.
void crossOver(Plugin dumper, Plugin restorer, uint32_t dstBase) {
    testsupport::TempDir images;
    auto src = generatedMachine(2, 0x1000);
    DumpedTask task;
    std::vector<Workload> work(2);
    Before before;
    {
        Installed routes(*src);
        startOnEveryGpu(&work);
        ASSERT_FALSE(::testing::Test::HasFatalFailure());
        fakekfd::FakeProcess* p = src->kernel->process(getpid());
        before = stateOf(*p);
        if (dumper == Plugin::Upstream) {
            upstreamDumpThisProcess(*src, images / "", &task);
        } else {
            auto store = storeAt(images);
            ASSERT_NE(store, nullptr);
            dumpThisProcess(*src, *store, &task);
            // Our frontend names itself amdgpu_plugin in criu's inventory
            // (criu-frontend/plugin_session.cpp), as upstream's restore requires.
            upstreamInventoryAdd("amdgpu_plugin");
        }
        ASSERT_FALSE(::testing::Test::HasFatalFailure());
        EXPECT_FALSE(p->paused) << "the dump left the process paused";
        EXPECT_EQ(p->evictions, 0);
        EXPECT_TRUE(src->kernel->unservedIoctls().empty());
        expectFaultsOf(dumper, *src->kernel);
        EXPECT_EQ(upstreamInventoryCount(), 1) << "the device VMAs put no plugin in the inventory";
        // The process still runs on the source machine after the dump.
        expectKnownBytes(work[1]);
    }
    dropDeviceVmas(task);
    src.reset(); // the old machine and every byte of its BOs are gone

    auto dst = generatedMachine(2, dstBase);
    dst->kernel->setFirstFd(5000);
    Installed routes(*dst);
    if (restorer == Plugin::Upstream) {
        upstreamRestoreThisProcess(*dst, images / "", task);
    } else {
        auto store = storeAt(images);
        ASSERT_NE(store, nullptr);
        restoreThisProcess(*dst, *store, task);
    }
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    expectFaultsOf(restorer, *dst->kernel);
    fakekfd::FakeProcess* q = dst->kernel->process(getpid());
    ASSERT_NE(q, nullptr);
    Before after = stateOf(*q);
    EXPECT_EQ(after.bos, before.bos);
    EXPECT_EQ(after.queues, before.queues);
    EXPECT_EQ(after.events, before.events);
    EXPECT_TRUE(q->resumed);
    EXPECT_EQ(q->evictions, 0) << "the restored process's queues are not running";

    expectCarriesOn(work);
    expectStopsCleanly(work, *dst->kernel);
}

} // namespace

TEST(UpstreamPlugin, GivenTheThunksState_WhenUpstreamDumpsAndOursRestores_ThenTheProcessCarriesOn) {
    inFreshProcess([] { crossOver(Plugin::Upstream, Plugin::Ours, 0x7000); });
}

TEST(UpstreamPlugin, GivenTheThunksState_WhenOursDumpsAndUpstreamRestores_ThenTheProcessCarriesOn) {
    inFreshProcess([] { crossOver(Plugin::Ours, Plugin::Upstream, 0x7000); });
}

TEST(UpstreamPlugin, GivenTheThunksState_WhenUpstreamDumpsAndRestores_ThenTheProcessCarriesOn) {
    inFreshProcess([] { crossOver(Plugin::Upstream, Plugin::Upstream, 0x1000); });
}

// criu 4.1.1's sdma_copy_bo returns what its clean-up calls return, not the failed copy's error:
// a copy that fails (here the fence wait) leaves the pages image short and the dump reports
// success. The checkpoint is then hostile input for the restore: ours refuses it naming the
// image, before any device state is made.
TEST(UpstreamPlugin,
     GivenUpstreamsCopyFailsUnreported_WhenOursRestores_ThenItRefusesTheShortPages) {
    inFreshProcess([] {
        testsupport::TempDir images;
        auto src = generatedMachine(1, 0x1000);
        DumpedTask task;
        Workload work;
        {
            Installed routes(*src);
            ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtOpenKFD());
            startWorkload(gpuNodes().at(0), &work);
            ASSERT_FALSE(::testing::Test::HasFatalFailure());
            src->kernel->failCall("waitFence", EIO);
            upstreamDumpThisProcess(*src, images / "", &task); // expects success: it says so
            ASSERT_FALSE(::testing::Test::HasFatalFailure());
        }
        dropDeviceVmas(task);
        src.reset();
        auto dst = generatedMachine(1, 0x1000);
        dst->kernel->setFirstFd(5000);
        Installed routes(*dst);
        auto store = storeAt(images);
        ASSERT_NE(store, nullptr);
        auto dev = dst->device(store.get());
        uint32_t kfdId = task.fdOfId.begin()->first;
        auto fd = dev->restoreFile(kfdId);
        ASSERT_FALSE(fd.ok()) << "a checkpoint with short pages restored";
        EXPECT_NE(fd.error().describe().find("amdgpu-pages-"), std::string::npos)
            << fd.error().describe();
        fakekfd::FakeProcess* q = dst->kernel->process(getpid());
        EXPECT_TRUE(q == nullptr || q->bos.empty()) << "the refused restore made BOs";
    });
}
