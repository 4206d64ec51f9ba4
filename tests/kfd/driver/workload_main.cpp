// kfd-driver-workload: what a ROCm runtime does first, through AMD's thunk (Debian's libhsakmt,
// unmodified) and nothing else: opens KFD, reads the topology, allocates a VRAM buffer on the
// first GPU and a GTT buffer, maps both to the GPU and writes known bytes through the thunk's CPU
// pointers. It prints "vram ADDR SIZE", "gtt ADDR SIZE" and "ready", waits for a line on stdin,
// then prints "saw BYTE": the byte at kCheckerOffset of its VRAM buffer (a second process writes
// it through the machine's memory), frees everything and closes KFD. Exit status 0 when every
// thunk call succeeded, else 1 with the failing call on stderr.
#include "known_bytes.h"

#include <hsakmt.h>

#include <cstdio>
#include <cstring>

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

HsaMemFlags memFlags(bool nonPaged, bool coarse) {
    HsaMemFlags f{};
    f.ui32.NonPaged = nonPaged;
    f.ui32.HostAccess = 1;
    f.ui32.PageSize = HSA_PAGE_SIZE_4KB;
    f.ui32.CoarseGrain = coarse;
    return f;
}

} // namespace

int main() {
    constexpr HSAuint64 kVramSize = 2 << 20;
    constexpr HSAuint64 kGttSize = 64 << 10;
    if (!ok(hsaKmtOpenKFD(), "hsaKmtOpenKFD"))
        return 1;
    HsaSystemProperties sys{};
    if (!ok(hsaKmtAcquireSystemProperties(&sys), "hsaKmtAcquireSystemProperties"))
        return 1;
    HSAuint32 gpu = sys.NumNodes;
    for (HSAuint32 n = 0; n < sys.NumNodes && gpu == sys.NumNodes; ++n) {
        HsaNodeProperties props{};
        if (!ok(hsaKmtGetNodeProperties(n, &props), "hsaKmtGetNodeProperties"))
            return 1;
        if (props.NumFComputeCores > 0)
            gpu = n;
    }
    if (gpu == sys.NumNodes) {
        fprintf(stderr, "kfd-driver-workload: the topology has no GPU node\n");
        return 1;
    }
    void* vram = nullptr;
    void* gtt = nullptr;
    if (!ok(hsaKmtAllocMemory(gpu, kVramSize, memFlags(true, false), &vram), "VRAM allocation") ||
        !ok(hsaKmtMapMemoryToGPU(vram, kVramSize, nullptr), "VRAM map to GPU") ||
        !ok(hsaKmtAllocMemory(0, kGttSize, memFlags(true, true), &gtt), "GTT allocation") ||
        !ok(hsaKmtMapMemoryToGPU(gtt, kGttSize, nullptr), "GTT map to GPU"))
        return 1;
    fill(vram, kVramSize, 0);
    fill(gtt, kGttSize, 1);
    printf("vram %p %llu\ngtt %p %llu\nready\n", vram, static_cast<unsigned long long>(kVramSize),
           gtt, static_cast<unsigned long long>(kGttSize));
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof(line), stdin)) {
        fprintf(stderr, "kfd-driver-workload: stdin closed before the check\n");
        return 1;
    }
    printf("saw %u\n", static_cast<uint8_t*>(vram)[kfddriver::kCheckerOffset]);
    fflush(stdout);
    bool freed = ok(hsaKmtUnmapMemoryToGPU(vram), "VRAM unmap") &&
                 ok(hsaKmtFreeMemory(vram, kVramSize), "VRAM free") &&
                 ok(hsaKmtUnmapMemoryToGPU(gtt), "GTT unmap") &&
                 ok(hsaKmtFreeMemory(gtt, kGttSize), "GTT free") &&
                 ok(hsaKmtCloseKFD(), "hsaKmtCloseKFD");
    return freed ? 0 : 1;
}
