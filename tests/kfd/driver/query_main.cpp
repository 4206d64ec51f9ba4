// kfd-driver-query ROOT PID: what the user-space KFD driver at ROOT holds for process PID (its pid
// as the driver sees it), for scripts (the e2e scenarios on the driver): first
//   process running|paused evictions N
// (paused: its queues evicted by CRIU's PROCESS_INFO and not yet UNPAUSEd), then one line per BO,
//   bo VRAM|GTT|USERPTR|DOORBELL|MMIO_REMAP GPU_ID VA SIZE machine|process [USER_ADDR]
// (machine: its bytes lie in the machine's memory; process: they are not the machine's; a
// userptr BO's USER_ADDR: the process's memory it registers), then one line per queue,
//   queue compute|sdma GPU_ID RING DOORBELL
// (DOORBELL: the value in the queue's doorbell in the machine's memory, "unmapped" while the
// process has not mapped its doorbell page), then one line per event,
//   event ID signaled|unsignaled
// kfd-driver-query ROOT --processes: the pid of every KFD process the driver holds, one a line.
// Exit status 0, or 1 with the reason on stderr.
#include "kfd/driver_protocol.h"
#include "kfd/kfd_uapi.h"

#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using kfddriver::Message;
using kfddriver::Op;

namespace {

bool ask(const std::string& root, Op op, long pid, Message* answer) {
    std::string error;
    int sock = kfddriver::connectDriver(root, &error);
    if (sock < 0) {
        fprintf(stderr, "kfd-driver-query: %s\n", error.c_str());
        return false;
    }
    Message request;
    request.op = static_cast<uint32_t>(op);
    request.a = static_cast<uint64_t>(pid);
    int r = kfddriver::exchange(sock, request, answer);
    close(sock);
    if (r != 0 || answer->pid != 0) {
        fprintf(stderr, "kfd-driver-query: the driver at %s did not answer about process %ld: %s\n",
                root.c_str(), pid, strerror(r ? -r : -answer->pid));
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 3 && !strcmp(argv[2], "--processes")) {
        Message answer;
        std::vector<uint64_t> pids;
        if (!ask(argv[1], Op::ListBos, 0, &answer) ||
            !kfddriver::decodeNumbers(answer.text, &pids)) {
            fprintf(stderr, "kfd-driver-query: no list of processes\n");
            return 1;
        }
        for (uint64_t pid : pids)
            printf("%llu\n", static_cast<unsigned long long>(pid));
        return 0;
    }
    char* end = nullptr;
    long pid = argc == 3 ? strtol(argv[2], &end, 10) : 0;
    if (argc != 3 || !end || *end || pid <= 0) {
        fprintf(stderr, "usage: kfd-driver-query ROOT PID|--processes\n");
        return 2;
    }
    std::string root = argv[1];
    Message bosAnswer, queuesAnswer, eventsAnswer;
    std::vector<kfddriver::BoInfo> bos;
    std::vector<kfddriver::QueueInfo> queues;
    std::vector<kfddriver::EventInfo> events;
    if (!ask(root, Op::ListBos, pid, &bosAnswer) || !kfddriver::decodeBos(bosAnswer.text, &bos) ||
        !ask(root, Op::ListQueues, pid, &queuesAnswer) ||
        !kfddriver::decodeQueues(queuesAnswer.text, &queues) ||
        !ask(root, Op::ListEvents, pid, &eventsAnswer) ||
        !kfddriver::decodeEvents(eventsAnswer.text, &events)) {
        fprintf(stderr, "kfd-driver-query: no queues and events of process %ld\n", pid);
        return 1;
    }
    int memory = open(kfddriver::memoryNodePath(root).c_str(), O_RDONLY | O_CLOEXEC);
    if (memory < 0) {
        fprintf(stderr, "kfd-driver-query: %s: %s\n", kfddriver::memoryNodePath(root).c_str(),
                strerror(errno));
        return 1;
    }
    printf("process %s evictions %llu\n", queuesAnswer.a ? "paused" : "running",
           static_cast<unsigned long long>(queuesAnswer.b));
    for (const kfddriver::BoInfo& b : bos) {
        printf("bo %s 0x%x 0x%llx %llu %s", kfd::boKindName(b.flags), b.gpuId,
               static_cast<unsigned long long>(b.addr), static_cast<unsigned long long>(b.size),
               b.memoryOffset == kfddriver::BoInfo::kNoMemory ? "process" : "machine");
        if (b.flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) // ALLOC_MEMORY_OF_GPU's mmap_offset
            printf(" 0x%llx", static_cast<unsigned long long>(b.mmapOffset));
        printf("\n");
    }
    for (const kfddriver::QueueInfo& q : queues) {
        bool sdma = q.type == KFD_IOC_QUEUE_TYPE_SDMA;
        std::string bell = "unmapped";
        if (q.doorbellMemoryOffset != kfddriver::QueueInfo::kNoMemory) {
            uint64_t value = 0; // an SDMA doorbell is 32 bits, an AQL one 64
            if (pread(memory, &value, sdma ? 4 : 8, static_cast<off_t>(q.doorbellMemoryOffset)) !=
                (sdma ? 4 : 8)) {
                fprintf(stderr, "kfd-driver-query: cannot read the doorbell of queue %u\n", q.id);
                return 1;
            }
            bell = std::to_string(value);
        }
        printf("queue %s 0x%x 0x%llx %s\n", sdma ? "sdma" : "compute", q.gpuId,
               static_cast<unsigned long long>(q.ringBase), bell.c_str());
    }
    close(memory);
    for (const kfddriver::EventInfo& e : events)
        printf("event %u %s\n", e.id, e.signaled ? "signaled" : "unsignaled");
    return 0;
}
