// Mesa's VRAM BOs (VM_ALWAYS_VALID | NO_CPU_ACCESS): the kernel neither maps one for the CPU nor
// exports one, so its contents travel by SDMA on the process's own DRM file (file_sdma.h). The
// process's GEM handles, contexts, syncobjs and GPU VA mappings are the same after the dump,
// and the restore brings every byte and number back. Also the fake's command submission.
#include "drm_fixture.h"
#include "file_sdma.h"

#include "formats/render_node_image.h"
#include "sdma/packets.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <tuple>

namespace fakedrm {
namespace {

constexpr uint64_t kGtt = AMDGPU_GEM_DOMAIN_GTT;
constexpr uint64_t kVram = AMDGPU_GEM_DOMAIN_VRAM;
constexpr uint64_t kMesaVram = AMDGPU_GEM_CREATE_VM_ALWAYS_VALID | AMDGPU_GEM_CREATE_NO_CPU_ACCESS;
constexpr int kPid = 100;
constexpr uint32_t kId = 1;

uint32_t allocCtx(FakeKernel& k, int fd) {
    drm_amdgpu_ctx a{};
    a.in.op = AMDGPU_CTX_OP_ALLOC_CTX;
    EXPECT_EQ(0, k.ioctl(fd, DRM_IOCTL_AMDGPU_CTX, &a));
    return a.out.alloc.ctx_id;
}

void freeCtx(FakeKernel& k, int fd, uint32_t id) {
    drm_amdgpu_ctx a{};
    a.in.op = AMDGPU_CTX_OP_FREE_CTX;
    a.in.ctx_id = id;
    EXPECT_EQ(0, k.ioctl(fd, DRM_IOCTL_AMDGPU_CTX, &a));
}

uint32_t createSyncobj(FakeKernel& k, int fd) {
    drm_syncobj_create c{};
    EXPECT_EQ(0, k.ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &c));
    return c.handle;
}

/// What a process's file holds, by number: GEM handles (with each BO's flags), context ids,
/// syncobj handles, GPU VA mappings.
using Numbers = std::tuple<std::map<uint32_t, uint64_t>, std::vector<uint32_t>,
                           std::vector<uint32_t>, std::vector<std::tuple<uint64_t, uint64_t>>>;
Numbers numbersOf(const File& f) {
    Numbers n;
    for (const auto& [h, bo] : f.handles)
        std::get<0>(n)[h] = bo->flags;
    for (const auto& [id, ctx] : f.contexts)
        std::get<1>(n).push_back(id);
    for (const auto& [h, s] : f.syncobjs)
        std::get<2>(n).push_back(h);
    for (const Mapping& m : f.vm)
        std::get<3>(n).emplace_back(m.addr, m.size);
    std::sort(std::get<3>(n).begin(), std::get<3>(n).end());
    return n;
}

/// A process as Mesa makes one: an ordinary GTT BO, Mesa VRAM BOs (one of 5 MiB + a page,
/// more than one staging chunk; one not mapped at all), an exportable invisible VRAM BO, a freed
/// handle, contexts 1 and 3 (2 freed) and a syncobj.
struct MesaApp {
    AppFile file;
    std::vector<uint32_t> bos;
};
MesaApp makeMesaApp(FakeMachine& m) {
    MesaApp app;
    app.file = m.open(kPid, 5, 128);
    uint64_t va = 0x7f0000000000ull;
    uint32_t gtt = m.createBo(app.file, 64 << 10, kGtt, 0, 1);
    uint32_t big = m.createBo(app.file, (5 << 20) + 4096, kVram, kMesaVram, 2);
    uint32_t freed = m.createBo(app.file, 4096, kGtt, 0, 3);
    uint32_t inv = m.createBo(app.file, 128 << 10, kVram, AMDGPU_GEM_CREATE_NO_CPU_ACCESS, 4);
    uint32_t unmapped = m.createBo(app.file, 256 << 10, kVram, kMesaVram, 5);
    EXPECT_EQ(0, m.mapBo(app.file, gtt, va, 0, 64 << 10));
    EXPECT_EQ(0, m.mapBo(app.file, big, va + (2 << 20), 0, (5 << 20) + 4096));
    EXPECT_EQ(0, m.mapBo(app.file, inv, va + (16 << 20), 0, 128 << 10));
    EXPECT_EQ(0, m.closeBo(app.file, freed));
    m.mmapOffset(app.file, gtt);
    allocCtx(*m.kernel, app.file.fd);
    uint32_t second = allocCtx(*m.kernel, app.file.fd);
    allocCtx(*m.kernel, app.file.fd);
    freeCtx(*m.kernel, app.file.fd, second);
    createSyncobj(*m.kernel, app.file.fd);
    app.bos = {gtt, big, inv, unmapped};
    return app;
}

TEST(DrmMesaVram, AMesaVramBoAmongOrdinaryBosComesBackWithEveryByteAndEveryNumber) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    MesaApp app = makeMesaApp(src);
    Numbers before = numbersOf(*src.kernel->fileOf(app.file.fd));
    Images images;
    auto dumped = dump(src, images, kPid, {{app.file, kId}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    EXPECT_EQ(numbersOf(*src.kernel->fileOf(app.file.fd)), before)
        << "the copy's context, staging BO and mappings are gone after the dump";
    EXPECT_TRUE(src.kernel->gpuFaults.empty()) << src.kernel->gpuFaults.front();
    EXPECT_GE(src.kernel->csCopyPackets, 4u) << "5 MiB + a page and 256 KiB by SDMA on the file";

    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(kId);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    for (uint32_t h : app.bos)
        expectSameBo(src, app.file, dst, fd.value(), h); // every byte, flags and mappings
    EXPECT_EQ(numbersOf(*dst.kernel->fileOf(fd.value())), before);
    EXPECT_TRUE(dst.kernel->gpuFaults.empty()) << dst.kernel->gpuFaults.front();
    EXPECT_GE(dst.kernel->csCopyPackets, 4u);
    EXPECT_EQ(dst.kernel->fileOf(fd.value())->handles.at(app.bos[1])->mmapOffset, 0u)
        << "no CPU mapping of a NO_CPU_ACCESS BO was asked";
}

// A mapping of the file's VM the dump does not know (a PRT range of a sparse resource: no BO
// behind it, so GET_MAPPING_INFO lists it nowhere) where the copy would put its window: the
// kernel refuses the overlapping map (amdgpu_vm_bo_map: EINVAL) and the window moves below.
TEST(DrmMesaVram, AWindowTheKernelFindsInUseMovesBelow) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    uint32_t h = src.createBo(f, 64 << 10, kVram, kMesaVram, 9);
    ASSERT_EQ(0, src.mapBo(f, h, 0x100000000ull, 0, 64 << 10));
    uint64_t top = 0x0000'8000'0000'0000ull;
    auto prt = std::make_shared<Bo>();
    prt->size = 64ull << 20;
    src.kernel->fileOf(f.fd)->vm.push_back(Mapping{top - (64ull << 20), 64ull << 20, 0, 0, prt});
    Images images;
    auto dumped = dump(src, images, kPid, {{f, kId}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    EXPECT_EQ(src.kernel->fileOf(f.fd)->vm.size(), 2u);
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto fd = makeDevice(dst, images)->restoreFile(kId);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    expectSameBo(src, f, dst, fd.value(), h);
}

TEST(DrmMesaVram, AVmWithoutRoomForTheWindowFailsTheDumpSayingSo) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    src.createBo(f, 64 << 10, kVram, kMesaVram, 9);
    // The whole general range is one mapping the dump cannot see.
    auto prt = std::make_shared<Bo>();
    src.kernel->fileOf(f.fd)->vm.push_back(
        Mapping{2ull << 20, 0x0000'8000'0000'0000ull - (2ull << 20), 0, 0, prt});
    Numbers before = numbersOf(*src.kernel->fileOf(f.fd));
    Images images;
    auto dumped = dump(src, images, kPid, {{f, kId}});
    ASSERT_FALSE(dumped.ok());
    std::string why = dumped.error().describe();
    EXPECT_NE(why.find("no room of"), std::string::npos) << why;
    EXPECT_NE(why.find("refused 16 windows"), std::string::npos) << why;
    EXPECT_NE(why.find("BO handle 1 on its own file"), std::string::npos) << why;
    EXPECT_EQ(numbersOf(*src.kernel->fileOf(f.fd)), before);
}

TEST(DrmMesaVram, AHungCopyFailsTheDumpNamingTheBoAndLeavesTheNumbersAsTheyWere) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    MesaApp app = makeMesaApp(src);
    Numbers before = numbersOf(*src.kernel->fileOf(app.file.fd));
    src.kernel->csHung = true;
    Images images;
    auto dumped = dump(src, images, kPid, {{app.file, kId}});
    ASSERT_FALSE(dumped.ok());
    std::string why = dumped.error().describe();
    EXPECT_NE(why.find("BO handle 2 did not complete within 30 s"), std::string::npos) << why;
    EXPECT_NE(why.find("renderD128"), std::string::npos) << why;
    EXPECT_EQ(numbersOf(*src.kernel->fileOf(app.file.fd)), before);
}

TEST(DrmMesaVram, AFailedStepOfTheCopyUndoesTheStepsBefore) {
    // The second GEM_VA MAP (the BO's) fails for another reason than an overlap.
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    MesaApp app = makeMesaApp(src);
    Numbers before = numbersOf(*src.kernel->fileOf(app.file.fd));
    src.kernel->failIoctl(DRM_IOCTL_AMDGPU_GEM_VA, 2, ENOMEM);
    Images images;
    auto dumped = dump(src, images, kPid, {{app.file, kId}});
    ASSERT_FALSE(dumped.ok());
    EXPECT_NE(dumped.error().describe().find("GEM_VA MAP of BO handle 2"), std::string::npos)
        << dumped.error().describe();
    EXPECT_EQ(numbersOf(*src.kernel->fileOf(app.file.fd)), before);
}

// The dump keys a BO by the inode of its dma-buf, which a VM_ALWAYS_VALID BO never has: an image
// saying otherwise was not made by a dump, and its BO could not be offered to its sharers.
TEST(DrmMesaVram, AnImageSharingAnAlwaysValidBoIsRefusedBeforeAnyGpuIsTouched) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    src.createBo(f, 4096, kGtt, 0, 1);
    src.createBo(f, 65536, kVram, AMDGPU_GEM_CREATE_NO_CPU_ACCESS, 2);
    Images images;
    ASSERT_TRUE(dump(src, images, kPid, {{f, kId}}).ok());
    editRenderNodeImage(
        images, kId, [](formats::RenderNodeImage& image) { image.bos[1].allocFlags = kMesaVram; });
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    std::string why = restoreErrorOf(dst, images, kId);
    EXPECT_NE(why.find("amdgpu-renderD-1.img: BO 1 (handle 2) is VM_ALWAYS_VALID"),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("share_key"), std::string::npos) << why;
    EXPECT_EQ(dst.kernel->ioctlCounts[DRM_IOCTL_AMDGPU_GEM_CREATE], 0) << "no GPU was touched";
}

TEST(DrmMesaVram, TheWindowIsTheHighestRoomNoMappingOverlaps) {
    constexpr uint64_t kMiB = 1ull << 20;
    using drm::freeVaWindow;
    EXPECT_EQ(freeVaWindow(2 * kMiB, 64 * kMiB, 3 * kMiB, 2 * kMiB, {}), 60 * kMiB);
    EXPECT_EQ(freeVaWindow(2 * kMiB, 64 * kMiB, 3 * kMiB, 2 * kMiB, {{60 * kMiB, 4 * kMiB}}),
              56 * kMiB);
    // Between two mappings when above them there is no room.
    EXPECT_EQ(freeVaWindow(2 * kMiB, 64 * kMiB, 4 * kMiB, 2 * kMiB,
                           {{62 * kMiB, 2 * kMiB}, {10 * kMiB, 50 * kMiB}, {2 * kMiB, 2 * kMiB}}),
              6 * kMiB);
    EXPECT_EQ(freeVaWindow(2 * kMiB, 64 * kMiB, 4 * kMiB, 2 * kMiB, {{2 * kMiB, 62 * kMiB}}),
              std::nullopt);
    EXPECT_EQ(freeVaWindow(2 * kMiB, 4 * kMiB, 4 * kMiB, 2 * kMiB, {}), std::nullopt);
}

// ---------------------------------------------------------------- the fake's submissions

class FakeCommandSubmission : public ::testing::Test {
protected:
    void SetUp() override {
        m.addGpu(gpuAt(128), "0000:03:00.0");
        f = m.open(kPid, 5, 128);
        ctx = allocCtx(*m.kernel, f.fd);
        ib = m.createBo(f, 4096, kGtt, 0, 0);
        src = m.createBo(f, 4096, kGtt, 0, 1);
        dst = m.createBo(f, 4096, kVram, kMesaVram, 2);
        ASSERT_EQ(0, m.mapBo(f, ib, kIbVa, 0, 4096));
        ASSERT_EQ(0, m.mapBo(f, src, kIbVa + 0x10000, 0, 4096));
        ASSERT_EQ(0, m.mapBo(f, dst, kIbVa + 0x20000, 0, 4096));
        std::vector<uint32_t> packets =
            sdma::buildLinearCopy(kIbVa + 0x10000, kIbVa + 0x20000, 4096);
        memcpy(m.kernel->fileOf(f.fd)->handles.at(ib)->bytes(), packets.data(), packets.size() * 4);
        dwords = static_cast<uint32_t>(packets.size());
    }
    base::Result<uint64_t> submit(std::vector<uint32_t> listed, uint32_t onCtx = 0) {
        drm::DrmCalls calls(*m.kernel);
        return calls.submitSdma(f.fd, onCtx ? onCtx : ctx, kIbVa, dwords, listed);
    }
    /// AMDGPU_CS of the IB with these chunks besides it (libdrm's amdgpu_cs_submit_raw2): its
    /// result.
    int submitRaw(std::vector<drm_amdgpu_cs_chunk> extra, uint32_t boList = 0) {
        drm_amdgpu_cs_chunk_ib chunkIb{};
        chunkIb.ip_type = AMDGPU_HW_IP_DMA;
        chunkIb.va_start = kIbVa;
        chunkIb.ib_bytes = dwords * 4;
        extra.push_back(
            {AMDGPU_CHUNK_ID_IB, sizeof(chunkIb) / 4, reinterpret_cast<uintptr_t>(&chunkIb)});
        std::vector<uint64_t> pointers;
        for (const drm_amdgpu_cs_chunk& c : extra)
            pointers.push_back(reinterpret_cast<uintptr_t>(&c));
        drm_amdgpu_cs cs{};
        cs.in.ctx_id = ctx;
        cs.in.bo_list_handle = boList;
        cs.in.num_chunks = static_cast<uint32_t>(pointers.size());
        cs.in.chunks = reinterpret_cast<uintptr_t>(pointers.data());
        return m.kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_CS, &cs);
    }
    /// AMDGPU_BO_LIST `op` of these handles: the result, *handle in and out.
    int boList(uint32_t op, std::vector<uint32_t> handles, uint32_t* handle) {
        std::vector<drm_amdgpu_bo_list_entry> entries;
        for (uint32_t h : handles)
            entries.push_back({h, 0});
        drm_amdgpu_bo_list list{};
        list.in.operation = op;
        list.in.list_handle = *handle;
        list.in.bo_number = static_cast<uint32_t>(entries.size());
        list.in.bo_info_size = sizeof(drm_amdgpu_bo_list_entry);
        list.in.bo_info_ptr = reinterpret_cast<uintptr_t>(entries.data());
        int r = m.kernel->ioctl(f.fd, DRM_IOCTL_AMDGPU_BO_LIST, &list);
        if (r == 0)
            *handle = list.out.list_handle;
        return r;
    }
    /// SYNCOBJ_CREATE: the handle.
    uint32_t createSyncobj() {
        drm_syncobj_create create{};
        EXPECT_EQ(0, m.kernel->ioctl(f.fd, DRM_IOCTL_SYNCOBJ_CREATE, &create));
        return create.handle;
    }
    /// SYNCOBJ_WAIT on `handle` until the fake's now: the result.
    int waitSyncobj(uint32_t handle) {
        drm_syncobj_wait wait{};
        wait.handles = reinterpret_cast<uintptr_t>(&handle);
        wait.count_handles = 1;
        wait.timeout_nsec = static_cast<int64_t>(m.kernel->nowNs);
        return m.kernel->ioctl(f.fd, DRM_IOCTL_SYNCOBJ_WAIT, &wait);
    }
    static constexpr uint64_t kIbVa = 0x200000000ull;
    FakeMachine m;
    AppFile f;
    uint32_t ctx = 0, ib = 0, src = 0, dst = 0, dwords = 0;
};

TEST_F(FakeCommandSubmission, ACopyBetweenResidentBosRunsAndItsFenceSignals) {
    auto seq = submit({ib, src});
    ASSERT_TRUE(seq.ok()) << seq.error().describe();
    EXPECT_EQ(m.contents(f.fd, dst), pattern(4096, 1)) << "dst is VM_ALWAYS_VALID: resident";
    EXPECT_TRUE(m.kernel->gpuFaults.empty());
    drm::DrmCalls calls(*m.kernel);
    EXPECT_TRUE(calls.waitSdma(f.fd, ctx, seq.value(), 0).value());
    EXPECT_FALSE(calls.waitSdma(f.fd, ctx, seq.value() + 1, 0).ok()) << "not submitted yet";
}

TEST_F(FakeCommandSubmission, ABoNeitherListedNorAlwaysValidIsAVmFault) {
    ASSERT_TRUE(submit({ib}).ok());
    ASSERT_EQ(m.kernel->gpuFaults.size(), 1u);
    EXPECT_NE(m.contents(f.fd, dst), pattern(4096, 1));
    ASSERT_TRUE(submit({src}).ok());
    EXPECT_EQ(m.kernel->gpuFaults.size(), 2u) << "the IB itself is not resident";
}

TEST_F(FakeCommandSubmission, AnUnknownContextOrHandleIsRefusedAsTheKernelDoes) {
    auto noCtx = submit({ib, src}, ctx + 1);
    ASSERT_FALSE(noCtx.ok());
    EXPECT_EQ(noCtx.error().sysErrno(), EINVAL);
    auto noBo = submit({ib, 77});
    ASSERT_FALSE(noBo.ok());
    EXPECT_EQ(noBo.error().sysErrno(), ENOENT);
}

// amdgpu_bo_list_ioctl and amdgpu_cs_parser_init: a list handle from 1, its BOs resident for a
// submission that names it, ENOENT for a list or a handle that does not exist.
TEST_F(FakeCommandSubmission, ABoListMakesItsBosResidentUntilItIsDestroyed) {
    uint32_t list = 0;
    EXPECT_EQ(-ENOENT, boList(AMDGPU_BO_LIST_OP_CREATE, {ib, 77}, &list));
    ASSERT_EQ(0, boList(AMDGPU_BO_LIST_OP_CREATE, {ib}, &list));
    EXPECT_EQ(1u, list);
    ASSERT_EQ(0, boList(AMDGPU_BO_LIST_OP_UPDATE, {ib, src}, &list));
    ASSERT_EQ(0, submitRaw({}, list));
    EXPECT_TRUE(m.kernel->gpuFaults.empty()) << m.kernel->gpuFaults.front();
    EXPECT_EQ(m.contents(f.fd, dst), pattern(4096, 1));
    ASSERT_EQ(0, boList(AMDGPU_BO_LIST_OP_DESTROY, {}, &list));
    EXPECT_EQ(-ENOENT, submitRaw({}, list));
    EXPECT_EQ(-ENOENT, boList(AMDGPU_BO_LIST_OP_DESTROY, {}, &list));
}

// amdgpu_cs_p2_syncobj_out: a SYNCOBJ_OUT chunk's syncobjs get the job's fence; a handle the file
// does not hold is EINVAL.
TEST_F(FakeCommandSubmission, ASyncobjOutChunkSignalsWithTheJobOrNeverOnAHungEngine) {
    uint32_t done = createSyncobj(), hung = createSyncobj();
    drm_amdgpu_bo_list_entry entries[2] = {{ib, 0}, {src, 0}};
    drm_amdgpu_bo_list_in listed{};
    listed.bo_number = 2;
    listed.bo_info_size = sizeof(drm_amdgpu_bo_list_entry);
    listed.bo_info_ptr = reinterpret_cast<uintptr_t>(entries);
    auto chunks = [&](drm_amdgpu_cs_chunk_sem* sem) {
        return std::vector<drm_amdgpu_cs_chunk>{
            {AMDGPU_CHUNK_ID_BO_HANDLES, sizeof(listed) / 4, reinterpret_cast<uintptr_t>(&listed)},
            {AMDGPU_CHUNK_ID_SYNCOBJ_OUT, sizeof(*sem) / 4, reinterpret_cast<uintptr_t>(sem)}};
    };
    EXPECT_EQ(-EINVAL, waitSyncobj(done)) << "no fence yet";
    drm_amdgpu_cs_chunk_sem unknown{hung + 1};
    EXPECT_EQ(-EINVAL, submitRaw(chunks(&unknown)));
    drm_amdgpu_cs_chunk_sem sem{done};
    ASSERT_EQ(0, submitRaw(chunks(&sem)));
    EXPECT_EQ(0, waitSyncobj(done));
    EXPECT_EQ(m.contents(f.fd, dst), pattern(4096, 1));
    m.kernel->csHung = true;
    sem.handle = hung;
    ASSERT_EQ(0, submitRaw(chunks(&sem)));
    EXPECT_EQ(-ETIME, waitSyncobj(hung));
}

} // namespace
} // namespace fakedrm
