// kfd-driver-render-client: what Mesa does with a render node, on Debian's unmodified
// libdrm_amdgpu (run it preloaded with the driver's interposer): device init, INFO queries, GTT
// BOs mapped by the CPU, a VRAM BO made as Mesa makes its images (VM_ALWAYS_VALID |
// NO_CPU_ACCESS), GPU VA mappings, a context, a syncobj, and SDMA copies GTT -> VRAM ->
// GTT: the first by amdgpu_cs_submit_raw2 with a BO_HANDLES chunk and a SYNCOBJ_OUT chunk
// (RADV's way), waited on through the syncobj, the second by amdgpu_cs_submit with a BO list
// (radeonsi's older way), waited on through its fence. Then the project's own libdrm calls
// (backends/sdma's real_libdrm.cpp) copy it once more on the same render node. Prints one
// line per fact ("KEY value...") and "ok" when every byte came back; exits 1 at the first
// failure, naming it. With --go-file FILE (the checkpoint mode of
// tests/e2e/scenario_kfd_driver_render.sh), its context and syncobj are the second of each (the
// first freed), a CPU-visible VRAM BO gets known bytes and an exportable VRAM BO the CPU may not
// map gets them by SDMA, and it waits for FILE before the end:
// criu dumps it there and restores it; it then checks every byte, its old context and syncobj,
// and submits an SDMA copy on them (checkpointed()).
#include "sdma/real_libdrm.h"

#include <amdgpu.h>
#include <amdgpu_drm.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kBytes = 256 * 1024;
constexpr uint64_t kTimeoutNs = 10ull * 1000 * 1000 * 1000;

[[noreturn]] void die(const std::string& what, int r) {
    fprintf(stderr, "render-client: %s: %d (%s)\n", what.c_str(), r, strerror(r < 0 ? -r : r));
    exit(1);
}

void check(int r, const std::string& what) {
    if (r != 0)
        die(what, r);
}

/// One SDMA COPY_LINEAR packet, laid out as the kernel's sdma_v4_0 packet header
/// (vega10_sdma_pkt_open.h, SDMA_PKT_COPY_LINEAR) declares it: DW0 op (bits 0-7) = SDMA_OP_COPY
/// (1), sub_op (bits 8-15) = SDMA_SUBOP_COPY_LINEAR (0); DW1 count (bits 0-21) = bytes - 1;
/// DW2 parameter (swap modes) 0; DW3-4 source address low/high; DW5-6 destination low/high.
/// Then NOPs (SDMA_OP_NOP, 0) to 8 dwords, as amdgpu_ring_pad_ib pads an SDMA IB.
std::vector<uint32_t> copyPacket(uint64_t src, uint64_t dst, uint64_t bytes) {
    std::vector<uint32_t> ib = {1u,
                                static_cast<uint32_t>(bytes - 1) & 0x3fffff,
                                0u,
                                static_cast<uint32_t>(src),
                                static_cast<uint32_t>(src >> 32),
                                static_cast<uint32_t>(dst),
                                static_cast<uint32_t>(dst >> 32)};
    ib.resize(8, 0u);
    return ib;
}

uint8_t patternByte(uint64_t i) {
    return static_cast<uint8_t>((i * 131 + 7) ^ (i >> 9));
}

/// A BO with its GPU VA (and CPU mapping when it has one).
struct Buffer {
    amdgpu_bo_handle bo = nullptr;
    amdgpu_va_handle range = nullptr;
    uint64_t va = 0;
    uint32_t handle = 0;
    uint8_t* cpu = nullptr;
};

Buffer makeBuffer(amdgpu_device_handle dev, uint64_t size, uint32_t heap, uint64_t flags,
                  const char* name) {
    Buffer b;
    amdgpu_bo_alloc_request req = {};
    req.alloc_size = size;
    req.phys_alignment = 4096;
    req.preferred_heap = heap;
    req.flags = flags;
    check(amdgpu_bo_alloc(dev, &req, &b.bo), std::string("amdgpu_bo_alloc ") + name);
    check(amdgpu_bo_export(b.bo, amdgpu_bo_handle_type_kms, &b.handle),
          std::string("amdgpu_bo_export kms ") + name);
    check(
        amdgpu_va_range_alloc(dev, amdgpu_gpu_va_range_general, size, 4096, 0, &b.va, &b.range, 0),
        std::string("amdgpu_va_range_alloc ") + name);
    check(amdgpu_bo_va_op(b.bo, 0, size, b.va, AMDGPU_VM_PAGE_READABLE | AMDGPU_VM_PAGE_WRITEABLE,
                          AMDGPU_VA_OP_MAP),
          std::string("amdgpu_bo_va_op map ") + name);
    if (!(flags & AMDGPU_GEM_CREATE_NO_CPU_ACCESS)) {
        void* cpu = nullptr;
        check(amdgpu_bo_cpu_map(b.bo, &cpu), std::string("amdgpu_bo_cpu_map ") + name);
        b.cpu = static_cast<uint8_t*>(cpu);
    }
    printf("bo %s handle %u va 0x%llx\n", name, b.handle, static_cast<unsigned long long>(b.va));
    return b;
}

void freeBuffer(Buffer& b, uint64_t size) {
    if (b.cpu)
        check(amdgpu_bo_cpu_unmap(b.bo), "amdgpu_bo_cpu_unmap");
    check(amdgpu_bo_va_op(b.bo, 0, size, b.va, 0, AMDGPU_VA_OP_UNMAP), "amdgpu_bo_va_op unmap");
    check(amdgpu_va_range_free(b.range), "amdgpu_va_range_free");
    check(amdgpu_bo_free(b.bo), "amdgpu_bo_free");
}

/// The first byte of `bytes` that is not the pattern, or `size` when all are.
uint64_t firstMismatch(const uint8_t* bytes, uint64_t size) {
    for (uint64_t i = 0; i < size; ++i)
        if (bytes[i] != patternByte(i))
            return i;
    return size;
}

/// The IB of `ibBuf` made a copy of `bytes` from `src` to `dst`.
uint32_t writeIb(Buffer& ibBuf, uint64_t src, uint64_t dst, uint64_t bytes) {
    std::vector<uint32_t> ib = copyPacket(src, dst, bytes);
    memcpy(ibBuf.cpu, ib.data(), ib.size() * 4);
    return static_cast<uint32_t>(ib.size());
}

/// RADV's submission: IB, BO_HANDLES and SYNCOBJ_OUT chunks through amdgpu_cs_submit_raw2.
uint64_t submitRaw(amdgpu_device_handle dev, amdgpu_context_handle ctx, Buffer& ibBuf,
                   uint32_t ibDwords, const std::vector<uint32_t>& listed, uint32_t syncobj) {
    drm_amdgpu_cs_chunk_ib ib = {};
    ib.ip_type = AMDGPU_HW_IP_DMA;
    ib.va_start = ibBuf.va;
    ib.ib_bytes = ibDwords * 4;
    std::vector<drm_amdgpu_bo_list_entry> entries;
    for (uint32_t h : listed)
        entries.push_back({h, 0});
    drm_amdgpu_bo_list_in list = {};
    list.operation = ~0u;
    list.list_handle = ~0u;
    list.bo_number = static_cast<uint32_t>(entries.size());
    list.bo_info_size = sizeof(drm_amdgpu_bo_list_entry);
    list.bo_info_ptr = reinterpret_cast<uintptr_t>(entries.data());
    drm_amdgpu_cs_chunk_sem signal = {syncobj};
    drm_amdgpu_cs_chunk chunks[3] = {
        {AMDGPU_CHUNK_ID_IB, sizeof(ib) / 4, reinterpret_cast<uintptr_t>(&ib)},
        {AMDGPU_CHUNK_ID_BO_HANDLES, sizeof(list) / 4, reinterpret_cast<uintptr_t>(&list)},
        {AMDGPU_CHUNK_ID_SYNCOBJ_OUT, sizeof(signal) / 4, reinterpret_cast<uintptr_t>(&signal)}};
    uint64_t seq = 0;
    check(amdgpu_cs_submit_raw2(dev, ctx, 0, 3, chunks, &seq), "amdgpu_cs_submit_raw2");
    return seq;
}

/// radeonsi's older submission: amdgpu_cs_submit with a BO list; waits on its fence.
void submitWithList(amdgpu_device_handle dev, amdgpu_context_handle ctx, Buffer& ibBuf,
                    uint32_t ibDwords, std::vector<amdgpu_bo_handle> bos) {
    amdgpu_bo_list_handle list = nullptr;
    check(amdgpu_bo_list_create(dev, static_cast<uint32_t>(bos.size()), bos.data(), nullptr, &list),
          "amdgpu_bo_list_create");
    amdgpu_cs_ib_info ib = {};
    ib.ib_mc_address = ibBuf.va;
    ib.size = ibDwords;
    amdgpu_cs_request req = {};
    req.ip_type = AMDGPU_HW_IP_DMA;
    req.resources = list;
    req.number_of_ibs = 1;
    req.ibs = &ib;
    check(amdgpu_cs_submit(ctx, 0, &req, 1), "amdgpu_cs_submit");
    amdgpu_cs_fence fence = {};
    fence.context = ctx;
    fence.ip_type = AMDGPU_HW_IP_DMA;
    fence.fence = req.seq_no;
    uint32_t expired = 0;
    check(amdgpu_cs_query_fence_status(&fence, kTimeoutNs, 0, &expired),
          "amdgpu_cs_query_fence_status");
    if (!expired)
        die("the fence of amdgpu_cs_submit did not signal", 0);
    printf("submit list seq %llu signaled\n", static_cast<unsigned long long>(req.seq_no));
    check(amdgpu_bo_list_destroy(list), "amdgpu_bo_list_destroy");
}

/// The project's own libdrm calls (sdma::Libdrm, real_libdrm.cpp): a GTT BO of its own on its
/// own fd of the node, the copy of `size` bytes from VA `src` of the process's VM... which is
/// another file's VM, so the copy goes between two BOs of its own: one filled from `from` by the
/// CPU, the other read back.
void copyWithRealLibdrm(const char* node, const uint8_t* from, uint64_t size) {
    auto drm = sdma::makeRealLibdrm();
    int fd = drm->openRenderNode(node);
    if (fd < 0)
        die("sdma::Libdrm openRenderNode", fd);
    sdma::Device dev{};
    check(drm->deviceInitialize(fd, &dev), "sdma::Libdrm deviceInitialize");
    sdma::Bo bos[3]{};
    void* cpu[3]{};
    uint64_t vas[3]{};
    sdma::VaRange ranges[3]{};
    const uint64_t sizes[3] = {size, size, 4096}; // source, destination, IB
    for (int i = 0; i < 3; ++i) {
        check(drm->boAllocGtt(dev, sizes[i], &bos[i]), "sdma::Libdrm boAllocGtt");
        check(drm->boCpuMap(bos[i], &cpu[i]), "sdma::Libdrm boCpuMap");
        check(drm->vaRangeAlloc(dev, sizes[i], 4096, &vas[i], &ranges[i]),
              "sdma::Libdrm vaRangeAlloc");
        check(drm->boVaOp(bos[i], sizes[i], vas[i], true), "sdma::Libdrm boVaOp map");
    }
    memcpy(cpu[0], from, size);
    std::vector<uint32_t> ib = copyPacket(vas[0], vas[1], size);
    memcpy(cpu[2], ib.data(), ib.size() * 4);
    sdma::Context ctx{};
    sdma::BoList list{};
    check(drm->ctxCreate(dev, &ctx), "sdma::Libdrm ctxCreate");
    check(drm->boListCreate(dev, {bos[0], bos[1], bos[2]}, &list), "sdma::Libdrm boListCreate");
    uint64_t seq = 0;
    bool signaled = false;
    check(drm->submitSdma(ctx, list, vas[2], static_cast<uint32_t>(ib.size()), &seq),
          "sdma::Libdrm submitSdma");
    check(drm->waitFence(ctx, seq, kTimeoutNs, &signaled), "sdma::Libdrm waitFence");
    if (!signaled)
        die("sdma::Libdrm: the fence did not signal", 0);
    uint64_t bad = firstMismatch(static_cast<const uint8_t*>(cpu[1]), size);
    printf("real_libdrm copy %llu of %llu bytes\n", static_cast<unsigned long long>(bad),
           static_cast<unsigned long long>(size));
    check(drm->boListDestroy(list), "sdma::Libdrm boListDestroy");
    check(drm->ctxFree(ctx), "sdma::Libdrm ctxFree");
    for (int i = 0; i < 3; ++i) {
        check(drm->boVaOp(bos[i], sizes[i], vas[i], false), "sdma::Libdrm boVaOp unmap");
        check(drm->vaRangeFree(ranges[i]), "sdma::Libdrm vaRangeFree");
        check(drm->boCpuUnmap(bos[i]), "sdma::Libdrm boCpuUnmap");
        check(drm->boFree(bos[i]), "sdma::Libdrm boFree");
    }
    check(drm->deviceDeinitialize(dev), "sdma::Libdrm deviceDeinitialize");
    check(drm->closeRenderNode(fd), "sdma::Libdrm closeRenderNode");
    if (bad != size)
        die("sdma::Libdrm: the copy differs at byte " + std::to_string(bad), 0);
}

/// A file exists.
bool exists(const char* path) {
    return access(path, F_OK) == 0;
}

/// The checkpoint mode: a VRAM BO the CPU maps gets known bytes, and one it may not map
/// (NO_CPU_ACCESS, exportable) gets them by an SDMA copy; then the process waits (a step
/// each 20 ms) until `goFile` exists, printing "waiting for FILE": criu dumps it there and
/// restores it as a new process, which goes on here. It then checks every byte of its CPU-mapped
/// BOs (the GTT source and destination and the visible VRAM BO), asks its old context's state
/// (AMDGPU_CTX QUERY_STATE2 of its old id) and waits on its old syncobj (signaled when dumped),
/// and submits work on both: an SDMA copy of the Mesa-made VRAM BO (which only the GPU reaches)
/// to the zeroed destination through amdgpu_cs_submit_raw2 on the old context, signaling the old
/// syncobj, reset first, which it waits on, and one of the hidden VRAM BO alike; every byte must
/// be back. A syncobj it makes then
/// gets number 1, the one freed before the dump (the restore's filler of it is gone).
void checkpointed(amdgpu_device_handle dev, amdgpu_context_handle ctx, uint32_t syncobj,
                  std::vector<Buffer*> bufs, const char* goFile) {
    Buffer& src = *bufs[0];
    Buffer& vram = *bufs[1];
    Buffer& dst = *bufs[2];
    Buffer& ib = *bufs[3];
    Buffer visible = makeBuffer(dev, kBytes, AMDGPU_GEM_DOMAIN_VRAM,
                                AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED, "visible");
    for (uint64_t i = 0; i < kBytes; ++i)
        visible.cpu[i] = static_cast<uint8_t>(~patternByte(i));
    // A VRAM BO the CPU may not map but that may be exported (not VM_ALWAYS_VALID): the backend
    // copies it by SDMA through a dma-buf; it gets the pattern by a copy from the GTT source,
    // listed as a per-submission BO must be.
    Buffer hidden =
        makeBuffer(dev, kBytes, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_NO_CPU_ACCESS, "hidden");
    uint32_t first = ~0u;
    submitRaw(dev, ctx, ib, writeIb(ib, src.va, hidden.va, kBytes),
              {src.handle, hidden.handle, ib.handle}, syncobj);
    check(amdgpu_cs_syncobj_wait(dev, &syncobj, 1, INT64_MAX, DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL,
                                 &first),
          "amdgpu_cs_syncobj_wait (the hidden VRAM BO filled)");
    printf("waiting for %s\n", goFile);
    while (!exists(goFile))
        usleep(20 * 1000);
    printf("going on\n");
    uint64_t bad = firstMismatch(src.cpu, kBytes);
    printf("gtt %llu of %llu bytes\n", static_cast<unsigned long long>(bad),
           static_cast<unsigned long long>(kBytes));
    if (bad != kBytes)
        die("the GTT BO differs at byte " + std::to_string(bad), 0);
    bad = firstMismatch(dst.cpu, kBytes);
    if (bad != kBytes)
        die("the destination GTT BO differs at byte " + std::to_string(bad), 0);
    for (uint64_t i = 0; i < kBytes; ++i)
        if (visible.cpu[i] != static_cast<uint8_t>(~patternByte(i)))
            die("the visible VRAM BO differs at byte " + std::to_string(i), 0);
    printf("visible vram %llu bytes\n", static_cast<unsigned long long>(kBytes));
    uint64_t flags = 0;
    check(amdgpu_cs_query_reset_state2(ctx, &flags), "amdgpu_cs_query_reset_state2 (old context)");
    printf("context flags 0x%llx\n", static_cast<unsigned long long>(flags));
    check(amdgpu_cs_syncobj_wait(dev, &syncobj, 1, 0, DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL, &first),
          "amdgpu_cs_syncobj_wait (old syncobj, signaled)");
    printf("syncobj %u signaled\n", syncobj);
    check(amdgpu_cs_syncobj_reset(dev, &syncobj, 1), "amdgpu_cs_syncobj_reset");
    memset(dst.cpu, 0, kBytes);
    uint32_t dwords = writeIb(ib, vram.va, dst.va, kBytes);
    uint64_t seq = submitRaw(dev, ctx, ib, dwords, {dst.handle, ib.handle}, syncobj);
    check(amdgpu_cs_syncobj_wait(dev, &syncobj, 1, INT64_MAX, DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL,
                                 &first),
          "amdgpu_cs_syncobj_wait (after the submission)");
    bad = firstMismatch(dst.cpu, kBytes);
    printf("after restore seq %llu copy %llu of %llu bytes\n", static_cast<unsigned long long>(seq),
           static_cast<unsigned long long>(bad), static_cast<unsigned long long>(kBytes));
    if (bad != kBytes)
        die("the VRAM BO copied after the restore differs at byte " + std::to_string(bad), 0);
    // The hidden VRAM BO, whose bytes the backend moved through its dma-buf, to the destination.
    memset(dst.cpu, 0, kBytes);
    check(amdgpu_cs_syncobj_reset(dev, &syncobj, 1), "amdgpu_cs_syncobj_reset (hidden)");
    submitRaw(dev, ctx, ib, writeIb(ib, hidden.va, dst.va, kBytes),
              {hidden.handle, dst.handle, ib.handle}, syncobj);
    check(amdgpu_cs_syncobj_wait(dev, &syncobj, 1, INT64_MAX, DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL,
                                 &first),
          "amdgpu_cs_syncobj_wait (the hidden VRAM BO copied)");
    bad = firstMismatch(dst.cpu, kBytes);
    printf("hidden vram %llu of %llu bytes\n", static_cast<unsigned long long>(bad),
           static_cast<unsigned long long>(kBytes));
    if (bad != kBytes)
        die("the hidden VRAM BO differs after the restore at byte " + std::to_string(bad), 0);
    // Number 1, freed before the dump, is free again: the restore's filler there is gone.
    uint32_t fresh = 0;
    check(amdgpu_cs_create_syncobj2(dev, 0, &fresh), "amdgpu_cs_create_syncobj2 (after restore)");
    printf("new syncobj %u\n", fresh);
    check(amdgpu_cs_destroy_syncobj(dev, fresh), "amdgpu_cs_destroy_syncobj (after restore)");
    freeBuffer(visible, kBytes);
    freeBuffer(hidden, kBytes);
}

} // namespace

int main(int argc, char** argv) {
    const char* node = argc > 1 ? argv[1] : "/dev/dri/renderD128";
    // --go-file FILE: the checkpoint mode (checkpointed() above).
    const char* goFile = argc > 3 && !strcmp(argv[2], "--go-file") ? argv[3] : nullptr;
    if (argc > 2 && !goFile)
        die(std::string("usage: ") + argv[0] + " [NODE [--go-file FILE]]", -EINVAL);
    setvbuf(stdout, nullptr, _IOLBF, 0);
    int fd = open(node, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        die(std::string("open ") + node, -errno);
    uint32_t major = 0, minor = 0;
    amdgpu_device_handle dev = nullptr;
    check(amdgpu_device_initialize(fd, &major, &minor, &dev), "amdgpu_device_initialize");
    printf("drm %u.%u\n", major, minor);
    amdgpu_gpu_info gpu = {};
    check(amdgpu_query_gpu_info(dev, &gpu), "amdgpu_query_gpu_info");
    printf("gpu family %u device 0x%x gb_addr_cfg 0x%x\n", gpu.family_id, gpu.asic_id,
           gpu.gb_addr_cfg);
    drm_amdgpu_info_device info = {};
    check(amdgpu_query_info(dev, AMDGPU_INFO_DEV_INFO, sizeof(info), &info),
          "AMDGPU_INFO_DEV_INFO");
    printf("va 0x%llx 0x%llx\n", static_cast<unsigned long long>(info.virtual_address_offset),
           static_cast<unsigned long long>(info.virtual_address_max));
    uint32_t sdmaRings = 0;
    check(amdgpu_query_hw_ip_count(dev, AMDGPU_HW_IP_DMA, &sdmaRings), "amdgpu_query_hw_ip_count");
    printf("sdma engines %u\n", sdmaRings);

    Buffer src = makeBuffer(dev, kBytes, AMDGPU_GEM_DOMAIN_GTT, 0, "src");
    Buffer vram =
        makeBuffer(dev, kBytes, AMDGPU_GEM_DOMAIN_VRAM,
                   AMDGPU_GEM_CREATE_VM_ALWAYS_VALID | AMDGPU_GEM_CREATE_NO_CPU_ACCESS, "vram");
    Buffer dst = makeBuffer(dev, kBytes, AMDGPU_GEM_DOMAIN_GTT, 0, "dst");
    Buffer ib = makeBuffer(dev, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, "ib");
    void* vramCpu = nullptr;
    printf("vram cpu map %d\n", amdgpu_bo_cpu_map(vram.bo, &vramCpu));
    for (uint64_t i = 0; i < kBytes; ++i)
        src.cpu[i] = patternByte(i);

    // In the checkpoint mode, the context and syncobj kept are the second of each, the first
    // freed: a restore must bring them back at number 2, with 1 free.
    amdgpu_context_handle freedCtx = nullptr;
    uint32_t freedSyncobj = 0;
    if (goFile) {
        check(amdgpu_cs_ctx_create(dev, &freedCtx), "amdgpu_cs_ctx_create (to free)");
        check(amdgpu_cs_create_syncobj2(dev, 0, &freedSyncobj),
              "amdgpu_cs_create_syncobj2 (to free)");
    }
    amdgpu_context_handle ctx = nullptr;
    check(amdgpu_cs_ctx_create(dev, &ctx), "amdgpu_cs_ctx_create");
    uint32_t syncobj = 0;
    check(amdgpu_cs_create_syncobj2(dev, 0, &syncobj), "amdgpu_cs_create_syncobj2");
    printf("syncobj %u\n", syncobj);
    if (goFile) {
        check(amdgpu_cs_ctx_free(freedCtx), "amdgpu_cs_ctx_free (the first)");
        check(amdgpu_cs_destroy_syncobj(dev, freedSyncobj),
              "amdgpu_cs_destroy_syncobj (the first)");
    }

    // GTT -> VRAM (the VRAM BO is resident with the VM: it is in no list), signaling the syncobj.
    uint32_t dwords = writeIb(ib, src.va, vram.va, kBytes);
    uint64_t seq = submitRaw(dev, ctx, ib, dwords, {src.handle, ib.handle}, syncobj);
    uint32_t first = ~0u;
    check(amdgpu_cs_syncobj_wait(dev, &syncobj, 1, INT64_MAX, DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL,
                                 &first),
          "amdgpu_cs_syncobj_wait");
    printf("submit raw seq %llu syncobj signaled\n", static_cast<unsigned long long>(seq));

    // VRAM -> GTT through a BO list, waited on by its fence.
    dwords = writeIb(ib, vram.va, dst.va, kBytes);
    submitWithList(dev, ctx, ib, dwords, {dst.bo, ib.bo});
    uint64_t bad = firstMismatch(dst.cpu, kBytes);
    printf("copy %llu of %llu bytes\n", static_cast<unsigned long long>(bad),
           static_cast<unsigned long long>(kBytes));
    if (bad != kBytes)
        die("the bytes back from VRAM differ at byte " + std::to_string(bad), 0);

    copyWithRealLibdrm(node, dst.cpu, kBytes);
    if (goFile)
        checkpointed(dev, ctx, syncobj, {&src, &vram, &dst, &ib}, goFile);

    check(amdgpu_cs_destroy_syncobj(dev, syncobj), "amdgpu_cs_destroy_syncobj");
    check(amdgpu_cs_ctx_free(ctx), "amdgpu_cs_ctx_free");
    for (Buffer* b : {&src, &vram, &dst})
        freeBuffer(*b, kBytes);
    freeBuffer(ib, 4096);
    check(amdgpu_device_deinitialize(dev), "amdgpu_device_deinitialize");
    close(fd);
    printf("ok\n");
    return 0;
}
