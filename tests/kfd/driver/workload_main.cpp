// kfd-driver-workload: what a ROCm runtime does at start, through AMD's thunk (Debian's libhsakmt,
// unmodified) and nothing else, as tests/thunk/thunk_workload.h does in-process: opens KFD, reads
// the topology, allocates a VRAM buffer on the first GPU and a GTT buffer, registers a buffer of
// its own memory (userptr), maps all three to the GPU and writes known bytes through its CPU
// pointers; creates an AQL compute queue and an SDMA queue on rings of their own and rings each
// one's doorbell (kComputeDoorbell, kSdmaDoorbell); creates a signal event (auto-reset) and
// signals it. It prints
//   vram ADDR SIZE / gtt ADDR SIZE / userptr ADDR SIZE
//   queue compute RING / queue sdma RING (the queue's ring buffer)
//   event ID
//   ready
// waits for a line on stdin, then prints "saw BYTE" (the byte at kCheckerOffset of its VRAM
// buffer, which a second process writes through the machine's memory), waits on its event (the
// signal is there, and the wait consumes it), destroys the event and the queues, frees everything
// through the thunk's handles, closes KFD and prints "done". Exit status 0 when every thunk call
// did what it should, else 1 with the failing call on stderr.
//
// With --steps N (the e2e scenario that real criu dumps and restores) it reads no stdin: after
// "ready" it runs N steps, each checking every byte of the VRAM, GTT and userptr buffers against
// what the last step wrote, writing the next value of each, ringing both doorbells with the
// step's value and printing "step S/N"; after step --wait-at K it prints "waiting for FILE" and
// waits until --go-file FILE exists (so criu dumps it at a known step). Each --wait-at is a gate
// of its own, with the --go-file that follows it (two dumps of a chain at two steps). After the
// last step it prints "rang COMPUTE SDMA" (the doorbells' last values) and, with --end-file FILE,
// waits for FILE (so the test can ask the driver about its queues while they live); then it
// allocates, checks and frees one more VRAM buffer, waits on its event, tears down as above and
// prints "checksum X" (of every byte it holds at the end and the step count: an uninterrupted run
// prints the same) and "done". --extra-bos N [--extra-bo-kib K] (tests/e2e/bench_vs_upstream.sh)
// adds N VRAM buffers of K KiB (default 64) with known bytes, checked after the last step.
#include "known_bytes.h"

#include <hsakmt.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

bool ok(HSAKMT_STATUS s, const char* what) {
    if (s != HSAKMT_STATUS_SUCCESS)
        fprintf(stderr, "kfd-driver-workload: %s failed: %d\n", what, static_cast<int>(s));
    return s == HSAKMT_STATUS_SUCCESS;
}

void fill(void* p, HSAuint64 size, int which) {
    auto* b = static_cast<uint8_t*>(p);
    for (HSAuint64 i = 0; i < size; ++i)
        b[i] = kfddriver::knownByte(which, i);
}

/// Non-paged memory is KFD's (VRAM on a GPU node, GTT on node 0); paged system memory is the
/// thunk's own, which it registers with KFD as userptr.
HsaMemFlags memFlags(bool nonPaged, bool coarse) {
    HsaMemFlags f{};
    f.ui32.NonPaged = nonPaged;
    f.ui32.HostAccess = 1;
    f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    f.ui32.CoarseGrain = coarse;
    return f;
}

constexpr HSAuint64 kVramSize = 2 << 20;
constexpr HSAuint64 kGttSize = 64 << 10;
constexpr HSAuint64 kUserptrSize = 256 << 10;
constexpr HSAuint64 kRingSize = 64 << 10;

struct Runtime {
    HSAuint32 gpu = 0;
    void* vram = nullptr;
    void* gtt = nullptr;
    void* userptr = nullptr;
    void* computeRing = nullptr;
    void* sdmaRing = nullptr;
    HSAuint64 aqlIndexes[2] = {}; ///< the AQL queue's read and write dispatch ids (ROCr's)
    HsaQueueResource compute{};
    HsaQueueResource sdma{};
    HsaEvent* event = nullptr;
};

/// The first node with compute cores, or false.
bool findGpu(HSAuint32* gpu) {
    HsaSystemProperties sys{};
    if (!ok(hsaKmtAcquireSystemProperties(&sys), "hsaKmtAcquireSystemProperties"))
        return false;
    for (HSAuint32 n = 0; n < sys.NumNodes; ++n) {
        HsaNodeProperties props{};
        if (!ok(hsaKmtGetNodeProperties(n, &props), "hsaKmtGetNodeProperties"))
            return false;
        if (props.NumFComputeCores > 0) {
            *gpu = n;
            return true;
        }
    }
    fprintf(stderr, "kfd-driver-workload: the topology has no GPU node\n");
    return false;
}

bool allocate(Runtime* r) {
    r->userptr = aligned_alloc(4096, kUserptrSize);
    if (!r->userptr) {
        fprintf(stderr, "kfd-driver-workload: no memory for the userptr buffer\n");
        return false;
    }
    bool done =
        ok(hsaKmtAllocMemory(r->gpu, kVramSize, memFlags(true, false), &r->vram), "VRAM alloc") &&
        ok(hsaKmtMapMemoryToGPU(r->vram, kVramSize, nullptr), "VRAM map to GPU") &&
        ok(hsaKmtAllocMemory(0, kGttSize, memFlags(true, true), &r->gtt), "GTT alloc") &&
        ok(hsaKmtMapMemoryToGPU(r->gtt, kGttSize, nullptr), "GTT map to GPU") &&
        ok(hsaKmtRegisterMemory(r->userptr, kUserptrSize), "userptr registration") &&
        ok(hsaKmtMapMemoryToGPU(r->userptr, kUserptrSize, nullptr), "userptr map to GPU");
    if (!done)
        return false;
    fill(r->vram, kVramSize, 0);
    fill(r->gtt, kGttSize, 1);
    fill(r->userptr, kUserptrSize, 2);
    return true;
}

bool startQueuesAndEvent(Runtime* r) {
    for (void** ring : {&r->computeRing, &r->sdmaRing})
        if (!ok(hsaKmtAllocMemory(0, kRingSize, memFlags(false, true), ring), "ring alloc") ||
            !ok(hsaKmtMapMemoryToGPU(*ring, kRingSize, nullptr), "ring map to GPU"))
            return false;
    // For AQL queues the runtime owns the read and write indexes.
    r->compute.Queue_read_ptr_aql = &r->aqlIndexes[0];
    r->compute.Queue_write_ptr_aql = &r->aqlIndexes[1];
    if (!ok(hsaKmtCreateQueue(r->gpu, HSA_QUEUE_COMPUTE_AQL, 100, HSA_QUEUE_PRIORITY_NORMAL,
                              r->computeRing, kRingSize, nullptr, &r->compute),
            "AQL queue creation") ||
        !ok(hsaKmtCreateQueue(r->gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, r->sdmaRing,
                              kRingSize, nullptr, &r->sdma),
            "SDMA queue creation"))
        return false;
    // A runtime rings a queue's doorbell after writing packets: the doorbell page is mapped.
    *r->compute.Queue_DoorBell_aql = kfddriver::kComputeDoorbell;
    *r->sdma.Queue_DoorBell = kfddriver::kSdmaDoorbell;
    HsaEventDescriptor desc{};
    desc.EventType = HSA_EVENTTYPE_SIGNAL;
    desc.NodeId = r->gpu;
    return ok(hsaKmtCreateEvent(&desc, false, false, &r->event), "event creation") &&
           ok(hsaKmtSetEvent(r->event), "hsaKmtSetEvent");
}

void printRuntime(const Runtime& r) {
    auto size = [](HSAuint64 s) { return static_cast<unsigned long long>(s); };
    printf("vram %p %llu\ngtt %p %llu\nuserptr %p %llu\n", r.vram, size(kVramSize), r.gtt,
           size(kGttSize), r.userptr, size(kUserptrSize));
    printf("queue compute %p\nqueue sdma %p\nevent %u\nready\n", r.computeRing, r.sdmaRing,
           r.event->EventId);
    fflush(stdout);
}

/// The event was signaled at start: a wait finds it at once, and consumes it (auto-reset).
bool eventWorks(const Runtime& r) {
    if (!ok(hsaKmtWaitOnEvent(r.event, 0), "the wait on the signaled event"))
        return false;
    if (hsaKmtWaitOnEvent(r.event, 0) != HSAKMT_STATUS_WAIT_TIMEOUT) {
        fprintf(stderr, "kfd-driver-workload: the auto-reset event stayed signaled\n");
        return false;
    }
    return true;
}

bool tearDown(Runtime* r) {
    bool done = ok(hsaKmtDestroyEvent(r->event), "hsaKmtDestroyEvent") &&
                ok(hsaKmtDestroyQueue(r->compute.QueueId), "AQL queue destruction") &&
                ok(hsaKmtDestroyQueue(r->sdma.QueueId), "SDMA queue destruction");
    for (auto [p, size] : {std::pair{r->vram, kVramSize}, std::pair{r->gtt, kGttSize},
                           std::pair{r->computeRing, kRingSize}, std::pair{r->sdmaRing, kRingSize}})
        done = done && ok(hsaKmtUnmapMemoryToGPU(p), "unmap from GPU") &&
               ok(hsaKmtFreeMemory(p, size), "free");
    done = done && ok(hsaKmtUnmapMemoryToGPU(r->userptr), "userptr unmap from GPU") &&
           ok(hsaKmtDeregisterMemory(r->userptr), "userptr deregistration") &&
           ok(hsaKmtCloseKFD(), "hsaKmtCloseKFD");
    free(r->userptr);
    return done;
}

/// A --wait-at gate: after `step`, wait until `goFile` exists.
struct Gate {
    unsigned step;
    std::string goFile;
};
/// What --steps runs with.
struct StepOptions {
    unsigned steps = 0;
    std::vector<Gate> gates;
    std::string endFile;
    unsigned extraBos = 0;       ///< --extra-bos: more VRAM BOs, for bench_vs_upstream.sh
    unsigned long extraKib = 64; ///< --extra-bo-kib: the size of each
};

/// The largest --extra-bo-kib: 4 GiB.
constexpr unsigned long kMaxExtraKib = 4ul << 20;

bool parse(int argc, char** argv, StepOptions* o) {
    for (int i = 1; i < argc; i += 2) {
        std::string opt = argv[i];
        if (i + 1 >= argc) {
            fprintf(stderr, "kfd-driver-workload: %s needs a value\n", opt.c_str());
            return false;
        }
        char* end = nullptr;
        unsigned long v = strtoul(argv[i + 1], &end, 10);
        bool parsed = end != argv[i + 1] && *end == '\0';
        bool number = parsed && v <= 100000;
        if (opt == "--steps" && number && v > 0)
            o->steps = static_cast<unsigned>(v);
        else if (opt == "--wait-at" && number)
            o->gates.push_back(Gate{static_cast<unsigned>(v), {}});
        else if (opt == "--go-file" && !o->gates.empty() && o->gates.back().goFile.empty())
            o->gates.back().goFile = argv[i + 1];
        else if (opt == "--end-file")
            o->endFile = argv[i + 1];
        else if (opt == "--extra-bos" && number)
            o->extraBos = static_cast<unsigned>(v);
        else if (opt == "--extra-bo-kib" && parsed && v > 0 && v <= kMaxExtraKib && v % 4 == 0)
            o->extraKib = v;
        else {
            fprintf(
                stderr,
                "kfd-driver-workload: bad option %s %s (--steps N [--wait-at K --go-file F]... "
                "[--end-file F] [--extra-bos N] [--extra-bo-kib K, a multiple of 4 up to 4 GiB])\n",
                opt.c_str(), argv[i + 1]);
            return false;
        }
    }
    for (const Gate& g : o->gates)
        if (g.goFile.empty() || g.step > o->steps) {
            fprintf(stderr,
                    "kfd-driver-workload: --wait-at %u needs a --go-file after it and at "
                    "most --steps\n",
                    g.step);
            return false;
        }
    return true;
}

void waitForFile(const std::string& file) {
    printf("waiting for %s\n", file.c_str());
    fflush(stdout);
    struct stat st;
    while (stat(file.c_str(), &st) != 0)
        usleep(10000);
}

/// The buffers the steps check and change: (pointer, size, which) for knownByte.
struct Held {
    void* p;
    HSAuint64 size;
    int which;
};

/// Every byte of every buffer is its known byte plus `step` (mod 256): else false, the first
/// wrong byte on stderr.
bool bytesAre(const Runtime& r, unsigned step) {
    for (Held h :
         {Held{r.vram, kVramSize, 0}, Held{r.gtt, kGttSize, 1}, Held{r.userptr, kUserptrSize, 2}}) {
        const auto* b = static_cast<const uint8_t*>(h.p);
        for (HSAuint64 i = 0; i < h.size; ++i) {
            auto want = static_cast<uint8_t>(kfddriver::knownByte(h.which, i) + step);
            if (b[i] != want) {
                fprintf(stderr,
                        "kfd-driver-workload: at step %u byte %llu of buffer %d is %u, not %u\n",
                        step, static_cast<unsigned long long>(i), h.which, b[i], want);
                return false;
            }
        }
    }
    return true;
}

void writeStep(Runtime* r, unsigned step) {
    for (Held h : {Held{r->vram, kVramSize, 0}, Held{r->gtt, kGttSize, 1},
                   Held{r->userptr, kUserptrSize, 2}}) {
        auto* b = static_cast<uint8_t*>(h.p);
        for (HSAuint64 i = 0; i < h.size; ++i)
            b[i] = static_cast<uint8_t>(kfddriver::knownByte(h.which, i) + step);
    }
    *r->compute.Queue_DoorBell_aql = kfddriver::kComputeDoorbell + step;
    *r->sdma.Queue_DoorBell = kfddriver::kSdmaDoorbell + step;
}

/// FNV-1a of every byte the buffers hold and of the step count.
uint64_t checksum(const Runtime& r, unsigned steps) {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint8_t byte) { h = (h ^ byte) * 1099511628211ull; };
    for (Held b :
         {Held{r.vram, kVramSize, 0}, Held{r.gtt, kGttSize, 1}, Held{r.userptr, kUserptrSize, 2}})
        for (HSAuint64 i = 0; i < b.size; ++i)
            mix(static_cast<const uint8_t*>(b.p)[i]);
    for (int shift = 0; shift < 32; shift += 8)
        mix(static_cast<uint8_t>(steps >> shift));
    return h;
}

/// A buffer allocated after the steps (after a restore: on the machine restored onto), its
/// bytes checked through its CPU pointer, freed again.
bool allocateMore(const Runtime& r) {
    constexpr HSAuint64 kMore = 64 << 10;
    void* p = nullptr;
    if (!ok(hsaKmtAllocMemory(r.gpu, kMore, memFlags(true, false), &p), "late VRAM alloc") ||
        !ok(hsaKmtMapMemoryToGPU(p, kMore, nullptr), "late VRAM map to GPU"))
        return false;
    fill(p, kMore, 3);
    bool same = true;
    for (HSAuint64 i = 0; i < kMore; ++i)
        same = same && static_cast<uint8_t*>(p)[i] == kfddriver::knownByte(3, i);
    if (!same)
        fprintf(stderr, "kfd-driver-workload: the late VRAM buffer lost its bytes\n");
    return ok(hsaKmtUnmapMemoryToGPU(p), "late VRAM unmap") &&
           ok(hsaKmtFreeMemory(p, kMore), "late VRAM free") && same;
}

/// --extra-bos: that many more VRAM BOs of --extra-bo-kib each, their bytes known (buffer 4),
/// checked at the end of the steps and held until the process ends.
bool allocateExtra(HSAuint32 gpu, const StepOptions& o, std::vector<void*>* bos) {
    HSAuint64 size = static_cast<HSAuint64>(o.extraKib) << 10;
    for (unsigned i = 0; i < o.extraBos; ++i) {
        void* p = nullptr;
        if (!ok(hsaKmtAllocMemory(gpu, size, memFlags(true, false), &p), "extra VRAM alloc") ||
            !ok(hsaKmtMapMemoryToGPU(p, size, nullptr), "extra VRAM map to GPU"))
            return false;
        fill(p, size, 4);
        bos->push_back(p);
    }
    return true;
}

bool extraBytesAre(const StepOptions& o, const std::vector<void*>& bos) {
    HSAuint64 size = static_cast<HSAuint64>(o.extraKib) << 10;
    for (void* p : bos)
        for (HSAuint64 i = 0; i < size; ++i)
            if (static_cast<uint8_t*>(p)[i] != kfddriver::knownByte(4, i)) {
                fprintf(stderr, "kfd-driver-workload: an extra VRAM buffer lost byte %llu\n",
                        static_cast<unsigned long long>(i));
                return false;
            }
    return true;
}

/// The --steps run after "ready": 0 or the exit status of a failure.
int runSteps(Runtime* r, const StepOptions& o, const std::vector<void*>& extra) {
    for (unsigned step = 1; step <= o.steps; ++step) {
        if (!bytesAre(*r, step - 1))
            return 1;
        writeStep(r, step);
        printf("step %u/%u\n", step, o.steps);
        fflush(stdout);
        for (const Gate& g : o.gates)
            if (step == g.step)
                waitForFile(g.goFile);
    }
    if (!bytesAre(*r, o.steps) || !extraBytesAre(o, extra))
        return 1;
    printf("rang %llu %llu\n", static_cast<unsigned long long>(*r->compute.Queue_DoorBell_aql),
           static_cast<unsigned long long>(*r->sdma.Queue_DoorBell));
    fflush(stdout);
    if (!o.endFile.empty())
        waitForFile(o.endFile);
    uint64_t sum = checksum(*r, o.steps);
    if (!allocateMore(*r) || !eventWorks(*r) || !tearDown(r))
        return 1;
    printf("checksum %016llx\ndone\n", static_cast<unsigned long long>(sum));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    StepOptions steps;
    if (!parse(argc, argv, &steps))
        return 2;
    Runtime r;
    std::vector<void*> extra;
    if (!ok(hsaKmtOpenKFD(), "hsaKmtOpenKFD") || !findGpu(&r.gpu) || !allocate(&r) ||
        !allocateExtra(r.gpu, steps, &extra) || !startQueuesAndEvent(&r))
        return 1;
    printRuntime(r);
    if (steps.steps)
        return runSteps(&r, steps, extra);
    char line[64];
    if (!fgets(line, sizeof(line), stdin)) {
        fprintf(stderr, "kfd-driver-workload: stdin closed before the check\n");
        return 1;
    }
    printf("saw %u\n", static_cast<uint8_t*>(r.vram)[kfddriver::kCheckerOffset]);
    fflush(stdout);
    if (!eventWorks(r) || !tearDown(&r))
        return 1;
    printf("done\n");
    return 0;
}
