#include "thunk_workload.h"

#include "thunk_machine.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace thunkfake {

uint8_t knownByte(int which, uint64_t offset) {
    return static_cast<uint8_t>(
        (offset * 131 + static_cast<uint64_t>(which) * 71 + (offset >> 12)) & 0xff);
}

namespace {

void fill(void* p, uint64_t size, int which) {
    auto* b = static_cast<uint8_t*>(p);
    for (uint64_t i = 0; i < size; ++i)
        b[i] = knownByte(which, i);
}

uint64_t firstMismatch(const void* p, uint64_t size, int which) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (uint64_t i = 0; i < size; ++i)
        if (b[i] != knownByte(which, i))
            return i;
    return size;
}

HsaMemFlags vramFlags() {
    HsaMemFlags f{};
    f.ui32.NonPaged = 1;
    f.ui32.HostAccess = 1;
    f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    return f;
}

/// System memory: paged memory the thunk maps anonymously and registers as userptr, non-paged
/// memory it allocates from KFD as GTT.
HsaMemFlags systemFlags(bool nonPaged) {
    HsaMemFlags f{};
    f.ui32.NonPaged = nonPaged;
    f.ui32.HostAccess = 1;
    f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    f.ui32.CoarseGrain = 1;
    return f;
}

} // namespace

void startWorkload(HSAuint32 node, Workload* w) {
    w->node = node;
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS,
              hsaKmtAllocMemory(node, Workload::kVramSize, vramFlags(), &w->vram));
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtMapMemoryToGPU(w->vram, Workload::kVramSize, nullptr));
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS,
              hsaKmtAllocMemory(0, Workload::kGttSize, systemFlags(true), &w->gtt));
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtMapMemoryToGPU(w->gtt, Workload::kGttSize, nullptr));
    w->userptr = aligned_alloc(4096, Workload::kUserptrSize);
    ASSERT_NE(w->userptr, nullptr);
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtRegisterMemory(w->userptr, Workload::kUserptrSize));
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS,
              hsaKmtMapMemoryToGPU(w->userptr, Workload::kUserptrSize, nullptr));
    fill(w->vram, Workload::kVramSize, 0);
    fill(w->gtt, Workload::kGttSize, 1);
    fill(w->userptr, Workload::kUserptrSize, 2);

    for (void** ring : {&w->computeRing, &w->sdmaRing}) {
        ASSERT_EQ(HSAKMT_STATUS_SUCCESS,
                  hsaKmtAllocMemory(0, Workload::kRingSize, systemFlags(false), ring));
        ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtMapMemoryToGPU(*ring, Workload::kRingSize, nullptr));
    }
    // For AQL queues the runtime owns the read and write indexes.
    w->compute.Queue_read_ptr_aql = &w->aqlIndexes[0];
    w->compute.Queue_write_ptr_aql = &w->aqlIndexes[1];
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS,
              hsaKmtCreateQueue(node, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL,
                                w->computeRing, Workload::kRingSize, nullptr, &w->compute));
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS,
              hsaKmtCreateQueue(node, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, w->sdmaRing,
                                Workload::kRingSize, nullptr, &w->sdma));
    // A runtime rings the doorbell after writing packets: the doorbell page must be mapped.
    *w->compute.Queue_DoorBell_aql = 1;
    *w->sdma.Queue_DoorBell = 1;

    HsaEventDescriptor desc{};
    desc.EventType = HSA_EVENTTYPE_SIGNAL;
    desc.NodeId = node;
    desc.SyncVar.SyncVar.UserData = nullptr;
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtCreateEvent(&desc, false, false, &w->event));
}

void expectKnownBytes(const Workload& w) {
    EXPECT_EQ(firstMismatch(w.vram, Workload::kVramSize, 0), Workload::kVramSize) << "VRAM";
    EXPECT_EQ(firstMismatch(w.gtt, Workload::kGttSize, 1), Workload::kGttSize) << "GTT";
    EXPECT_EQ(firstMismatch(w.userptr, Workload::kUserptrSize, 2), Workload::kUserptrSize)
        << "userptr";
}

void expectEventWorks(const Workload& w) {
    EXPECT_EQ(HSAKMT_STATUS_WAIT_TIMEOUT, hsaKmtWaitOnEvent(w.event, 0));
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtSetEvent(w.event));
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtWaitOnEvent(w.event, 0));
    // auto-reset (ManualReset false): the wait consumed the signal
    EXPECT_EQ(HSAKMT_STATUS_WAIT_TIMEOUT, hsaKmtWaitOnEvent(w.event, 0));
}

void stopWorkload(Workload* w) {
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtDestroyEvent(w->event));
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtDestroyQueue(w->compute.QueueId));
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtDestroyQueue(w->sdma.QueueId));
    for (auto [p, size] :
         {std::pair{w->vram, Workload::kVramSize}, std::pair{w->gtt, Workload::kGttSize},
          std::pair{w->computeRing, Workload::kRingSize},
          std::pair{w->sdmaRing, Workload::kRingSize}}) {
        EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtUnmapMemoryToGPU(p));
        EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtFreeMemory(p, size));
    }
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtUnmapMemoryToGPU(w->userptr));
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtDeregisterMemory(w->userptr));
    free(w->userptr);
    *w = Workload{};
}

void startOnEveryGpu(std::vector<Workload>* work) {
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtOpenKFD());
    std::vector<HSAuint32> nodes = gpuNodes();
    ASSERT_EQ(nodes.size(), work->size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        startWorkload(nodes[i], &(*work)[i]);
        ASSERT_FALSE(::testing::Test::HasFatalFailure());
    }
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtSetEvent((*work)[0].event));
}

void expectCarriesOn(std::vector<Workload>& work) {
    for (Workload& w : work) {
        expectKnownBytes(w);
        *w.compute.Queue_DoorBell_aql = 2;
        *w.sdma.Queue_DoorBell = 2;
    }
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtWaitOnEvent(work[0].event, 0)) << "the signal was lost";
    expectEventWorks(work[1]);
}

void expectStopsCleanly(std::vector<Workload>& work, fakekfd::FakeKernel& k) {
    for (Workload& w : work)
        stopWorkload(&w);
    fakekfd::FakeProcess* p = k.process(getpid());
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(p->queues.empty());
    EXPECT_TRUE(p->events.empty());
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtCloseKFD());
    EXPECT_TRUE(k.unservedIoctls().empty());
}

} // namespace thunkfake
