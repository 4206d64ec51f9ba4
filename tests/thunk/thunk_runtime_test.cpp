// AMD's thunk running a ROCm runtime's start on the fake machine: memory of every kind, queues
// and events, checked from both sides (the thunk's pointers and the fake kernel's objects).
#include "thunk_machine.h"
#include "thunk_workload.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <iomanip>
#include <sstream>

using namespace thunkfake;
using fakekfd::FakeBo;

namespace {

std::string hexList(const std::vector<unsigned long>& v) {
    std::ostringstream s;
    for (unsigned long x : v)
        s << " 0x" << std::hex << x;
    return s.str();
}

uint64_t addrOf(const void* p) {
    return reinterpret_cast<uint64_t>(p);
}

/// Expects the fake's BO at `p` to be of `kind` and hold the workload's bytes `which`.
void expectBo(fakekfd::FakeKernel& k, const void* p, uint64_t size, uint32_t kind, int which,
              uint32_t gpuId) {
    auto bo = k.boAt(getpid(), addrOf(p));
    ASSERT_NE(bo, nullptr) << "no BO at " << p;
    EXPECT_TRUE(bo->allocFlags & kind) << std::hex << bo->allocFlags;
    EXPECT_GE(bo->size, size);
    EXPECT_TRUE(bo->mappedOn.count(gpuId)) << "MAP_MEMORY_TO_GPU did not reach the fake";
    if (which < 0)
        return;
    std::vector<uint8_t> bytes(size);
    bo->read(0, bytes.data(), size);
    uint64_t bad = 0;
    while (bad < size && bytes[bad] == knownByte(which, bad))
        ++bad;
    EXPECT_EQ(bad, size) << "the CPU mapping is not the BO's memory";
}

void runWorkloadOnEveryGpu(fakekfd::TestMachine& m) {
    Installed routes(m);
    ASSERT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtOpenKFD());
    std::vector<HSAuint32> nodes = gpuNodes();
    auto gpus = m.topology.gpus();
    ASSERT_EQ(nodes.size(), gpus.size());
    std::vector<Workload> work(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
        SCOPED_TRACE("GPU node " + std::to_string(nodes[i]));
        startWorkload(nodes[i], &work[i]);
        ASSERT_FALSE(::testing::Test::HasFatalFailure());
    }
    fakekfd::FakeKernel& k = *m.kernel;
    fakekfd::FakeProcess* p = k.process(getpid());
    ASSERT_NE(p, nullptr);
    for (size_t i = 0; i < nodes.size(); ++i) {
        SCOPED_TRACE("GPU node " + std::to_string(nodes[i]));
        const Workload& w = work[i];
        uint32_t gpuId = gpus[i]->gpuId;
        expectKnownBytes(w);
        expectBo(k, w.vram, Workload::kVramSize, KFD_IOC_ALLOC_MEM_FLAGS_VRAM, 0, gpuId);
        expectBo(k, w.gtt, Workload::kGttSize, KFD_IOC_ALLOC_MEM_FLAGS_GTT, 1, gpuId);
        // userptr: the GPU VA may differ from the CPU address, which travels in mmap_offset.
        // System memory (GTT, userptr) belongs to the first GPU and is mapped to the others.
        auto up = std::find_if(p->bos.begin(), p->bos.end(), [&](const std::shared_ptr<FakeBo>& b) {
            return (b->allocFlags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) &&
                   b->mmapOffset == addrOf(w.userptr);
        });
        ASSERT_NE(up, p->bos.end()) << "no USERPTR BO of " << w.userptr;
        EXPECT_GE((*up)->size, Workload::kUserptrSize);
        EXPECT_TRUE((*up)->mappedOn.count(gpuId));

        for (const HsaQueueResource* q : {&w.compute, &w.sdma}) {
            // (the thunk's QueueId is its own queue object; the kernel's id stays inside it)
            const void* ring = q == &w.compute ? w.computeRing : w.sdmaRing;
            auto fq =
                std::find_if(p->queues.begin(), p->queues.end(), [&](const fakekfd::FakeQueue& f) {
                    return f.ringBase == addrOf(ring);
                });
            ASSERT_NE(fq, p->queues.end()) << "no queue on ring " << ring;
            EXPECT_EQ(fq->actualGpuId, gpuId);
            EXPECT_EQ(fq->type, q == &w.compute ? uint32_t{KFD_IOC_QUEUE_TYPE_COMPUTE_AQL}
                                                : uint32_t{KFD_IOC_QUEUE_TYPE_SDMA});
            EXPECT_EQ(fq->ringSize, Workload::kRingSize);
            EXPECT_EQ(fq->writePtr, q->QueueWptrValue);
            EXPECT_EQ(fq->readPtr, q->QueueRptrValue);
            if (q == &w.compute) { // AQL on gfx9 needs an EOP buffer and a CWSR area from the thunk
                EXPECT_TRUE(fq->eopBase && fq->ctxSave && fq->ctxSaveSize);
            }
            // The doorbell pointer lies in the mapped doorbell page at the queue's slot.
            auto maps = mappings();
            auto db = std::find_if(maps.begin(), maps.end(), [&](const FakeMapping& mp) {
                return mp.path == "/dev/kfd" && q->QueueDoorBell >= mp.addr &&
                       q->QueueDoorBell < mp.addr + mp.len;
            });
            ASSERT_NE(db, maps.end()) << "the doorbell is not in a mapping of /dev/kfd";
            EXPECT_EQ(q->QueueDoorBell - db->addr, fq->doorbellIndex * 8ull);
        }
        expectEventWorks(w);
    }
    ASSERT_FALSE(work.empty());
    auto ev = std::find_if(p->events.begin(), p->events.end(), [&](const fakekfd::FakeEvent& e) {
        return e.id == work[0].event->EventId;
    });
    ASSERT_NE(ev, p->events.end());
    EXPECT_EQ(ev->type, uint32_t{KFD_IOC_EVENT_SIGNAL});
    EXPECT_NE(p->eventPageHandle, 0u) << "the thunk gives a dGPU's event page as a BO";

    for (Workload& w : work) {
        void* vram = w.vram;
        stopWorkload(&w);
        EXPECT_EQ(k.boAt(getpid(), addrOf(vram)), nullptr) << "FREE_MEMORY_OF_GPU did not free";
    }
    EXPECT_TRUE(p->queues.empty());
    EXPECT_TRUE(p->events.empty());
    EXPECT_EQ(HSAKMT_STATUS_SUCCESS, hsaKmtCloseKFD());
    EXPECT_TRUE(k.unservedIoctls().empty())
        << "ioctls the fake does not serve:" << hexList(k.unservedIoctls());
}

} // namespace

TEST(ThunkRuntime,
     GivenTwoGeneratedGpus_WhenARuntimeStartsOnEach_ThenTheFakeHoldsWhatTheThunkSees) {
    inFreshProcess([] {
        auto m = generatedMachine(2);
        runWorkloadOnEveryGpu(*m);
    });
}

TEST(
    ThunkRuntime,
    GivenACapturedMi308xMachineOf32Partitions_WhenARuntimeStartsOnEach_ThenTheFakeHoldsWhatTheThunkSees) {
    onCapturedMachine("mi308x-8card-cpx", runWorkloadOnEveryGpu);
}
