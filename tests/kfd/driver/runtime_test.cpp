// The rest of what a ROCm runtime does, through the user-space KFD driver from another process:
// kfd-driver-workload (AMD's thunk, unmodified, preloaded with the driver's interposer) registers
// its own memory as userptr, makes an AQL and an SDMA queue on rings of their own, rings their
// doorbells and signals an event; this test process, attached to the same driver as a plugin
// inside criu would be, finds each of them in the driver with the properties the thunk gave
// them, and after the workload tore everything down through the thunk's handles, none of them.
#include "driver_test_support.h"
#include "kfd/driver_protocol.h"
#include "known_bytes.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

namespace {

using kfddriver::BoInfo;
using kfddriver::EventInfo;
using kfddriver::Message;
using kfddriver::Op;
using kfddriver::QueueInfo;
using namespace kfddrivertest;

std::vector<BoInfo> bosOf(const std::string& root, pid_t pid) {
    return listed<BoInfo>(root, Op::ListBos, pid, kfddriver::decodeBos);
}

std::vector<QueueInfo> queuesOf(const std::string& root, pid_t pid) {
    return listed<QueueInfo>(root, Op::ListQueues, pid, kfddriver::decodeQueues);
}

/// The events of `pid` in the driver; *eventPage gets its event page's handle.
std::vector<EventInfo> eventsOf(const std::string& root, pid_t pid, uint64_t* eventPage) {
    return listed<EventInfo>(root, Op::ListEvents, pid, kfddriver::decodeEvents, eventPage);
}

/// The driver's queue with ring `ring`.
QueueInfo queueWithRing(const std::vector<QueueInfo>& queues, uint64_t ring) {
    for (const QueueInfo& q : queues)
        if (q.ringBase == ring)
            return q;
    ADD_FAILURE() << "the driver has no queue on the ring at 0x" << std::hex << ring;
    return {};
}

/// The userptr BO of the workload's memory at `addr` (ALLOC_MEMORY_OF_GPU takes the user address
/// in mmap_offset; the thunk gives the BO a GPU VA of its own).
BoInfo userptrBoOf(const std::vector<BoInfo>& bos, uint64_t addr) {
    for (const BoInfo& b : bos)
        if ((b.flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) && b.mmapOffset == addr)
            return b;
    ADD_FAILURE() << "the driver has no userptr BO of the memory at 0x" << std::hex << addr;
    return {};
}

/// How many mappings of `pid` are of a kfd node of the driver at `root` (doorbell pages).
int kfdMappings(pid_t pid, const std::string& root) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::string line, prefix = kfddriver::filesPath(root) + "/";
    int n = 0;
    while (std::getline(maps, line)) {
        size_t path = line.find(prefix);
        n += path != std::string::npos && line.size() > 4 &&
             line.compare(line.size() - 4, 4, "/kfd") == 0;
    }
    return n;
}

/// The workload's own bytes at `addr`, read from this process (process_vm_readv).
std::vector<uint8_t> workloadBytes(pid_t pid, uint64_t addr, uint64_t size) {
    std::vector<uint8_t> bytes(size);
    iovec local{bytes.data(), size};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), size};
    EXPECT_EQ(static_cast<ssize_t>(size), process_vm_readv(pid, &local, 1, &remote, 1, 0))
        << strerror(errno);
    return bytes;
}

TEST(KfdDriver, TheThunksQueuesEventUserptrAndDoorbellsAreTheDriversAndGoThroughTheThunksHandles) {
    TwoGpuDriver machine;
    ASSERT_NO_FATAL_FAILURE(machine.start());
    const std::string& root = machine.root();
    {
        Printed printed;
        std::unique_ptr<Child> workload = machine.runWorkload(&printed);
        Buffer vram = printedBuffer(printed, "vram"), userptr = printedBuffer(printed, "userptr");
        ASSERT_EQ(1u, printed["queue compute"].size());
        ASSERT_EQ(1u, printed["queue sdma"].size());
        ASSERT_EQ(1u, printed["event"].size());
        uint64_t computeRing = number(printed["queue compute"][0]);
        uint64_t sdmaRing = number(printed["queue sdma"][0]);
        ASSERT_FALSE(::testing::Test::HasFailure());

        // userptr: a BO of the workload's own memory, which is not the machine's; the bytes are
        // where the workload wrote them, and a process of the machine reads them there.
        std::vector<BoInfo> bos = bosOf(root, workload->pid());
        BoInfo vramBo = boAt(bos, vram.addr), userptrBo = userptrBoOf(bos, userptr.addr);
        EXPECT_EQ(userptr.size, userptrBo.size);
        EXPECT_EQ(BoInfo::kNoMemory, userptrBo.memoryOffset);
        EXPECT_EQ(userptr.size,
                  firstMismatch(workloadBytes(workload->pid(), userptr.addr, userptr.size), 2));

        // The queues: on the rings the thunk gave them (paged memory, userptr too), on the GPU
        // of the VRAM buffer, each with a doorbell of its own in the process's doorbell page,
        // a mapping of the kfd node, holding what the workload wrote through the thunk's pointer.
        std::vector<QueueInfo> queues = queuesOf(root, workload->pid());
        ASSERT_EQ(2u, queues.size());
        QueueInfo compute = queueWithRing(queues, computeRing);
        QueueInfo sdma = queueWithRing(queues, sdmaRing);
        EXPECT_EQ(static_cast<uint32_t>(KFD_IOC_QUEUE_TYPE_COMPUTE_AQL), compute.type);
        EXPECT_EQ(static_cast<uint32_t>(KFD_IOC_QUEUE_TYPE_SDMA), sdma.type);
        for (const QueueInfo& q : {compute, sdma}) {
            EXPECT_EQ(vramBo.gpuId, q.gpuId);
            EXPECT_EQ(64u << 10, q.ringSize);
            EXPECT_TRUE(boAt(bos, q.ringBase).flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR);
            ASSERT_NE(QueueInfo::kNoMemory, q.doorbellMemoryOffset)
                << "queue " << q.id << ": its doorbell page was never mapped";
        }
        EXPECT_NE(compute.doorbellIndex, sdma.doorbellIndex);
        EXPECT_GE(kfdMappings(workload->pid(), root), 1);
        int memory = open(kfddriver::memoryNodePath(root).c_str(), O_RDONLY | O_CLOEXEC);
        ASSERT_GE(memory, 0) << strerror(errno);
        uint64_t computeDoorbell = 0;
        uint32_t sdmaDoorbell = 0;
        std::vector<uint8_t> bell = memoryBytes(memory, compute.doorbellMemoryOffset, 8);
        memcpy(&computeDoorbell, bell.data(), sizeof(computeDoorbell));
        bell = memoryBytes(memory, sdma.doorbellMemoryOffset, 4);
        memcpy(&sdmaDoorbell, bell.data(), sizeof(sdmaDoorbell));
        close(memory);
        EXPECT_EQ(kfddriver::kComputeDoorbell, computeDoorbell);
        EXPECT_EQ(kfddriver::kSdmaDoorbell, sdmaDoorbell);

        // The event: a signal event (auto-reset, the thunk's ManualReset false), signaled, on
        // the event page the thunk allocated (a BO of the process).
        uint64_t eventPage = 0;
        std::vector<EventInfo> events = eventsOf(root, workload->pid(), &eventPage);
        ASSERT_EQ(1u, events.size());
        EXPECT_EQ(number(printed["event"][0]), events[0].id);
        EXPECT_EQ(static_cast<uint32_t>(KFD_IOC_EVENT_SIGNAL), events[0].type);
        EXPECT_EQ(1u, events[0].autoReset);
        EXPECT_EQ(1u, events[0].signaled);
        EXPECT_NE(0u, eventPage);

        // The workload waits on its event, destroys the queues and the event and frees every
        // buffer through the thunk's handles: each call succeeds, and the driver is left with
        // none of them.
        workload->say("check\n");
        EXPECT_EQ(0u, workload->line().rfind("saw ", 0));
        EXPECT_EQ("done", workload->line());
        EXPECT_TRUE(queuesOf(root, workload->pid()).empty());
        EXPECT_TRUE(eventsOf(root, workload->pid(), &eventPage).empty());
        for (const BoInfo& b : bosOf(root, workload->pid()))
            for (uint64_t addr : {vram.addr, userptrBo.addr, computeRing, sdmaRing})
                EXPECT_NE(addr, b.addr) << "a BO the workload freed is still in the driver";
        int status = workload->wait();
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
    }
    machine.end();
}

} // namespace
