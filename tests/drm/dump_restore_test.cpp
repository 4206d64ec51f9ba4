// Dump -> images -> restore with the backend's own code against fake render nodes.
#include "drm_fixture.h"

#include "base/log.h"
#include "datapath/image_increment.h"
#include "formats/image_chain.h"
#include "formats/packed_image.h"
#include "formats/render_node_image.h"
#include "formats/seal_image.h"
#include "temp_dir.h"
#include "test_keys.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace fakedrm {
namespace {

constexpr uint64_t kGtt = AMDGPU_GEM_DOMAIN_GTT;
constexpr uint64_t kVram = AMDGPU_GEM_DOMAIN_VRAM;
constexpr uint64_t kVisible = AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED;
constexpr uint64_t kInvisible = AMDGPU_GEM_CREATE_NO_CPU_ACCESS;
constexpr int kPid = 100;

struct App {
    AppFile file;
    std::vector<uint32_t> handles;
};

// A process with BOs of every kind: GTT, visible VRAM, invisible VRAM (SDMA), GDS (no contents),
// several mappings of one BO and a partial mapping.
App makeRichApp(FakeMachine& m, unsigned minor, int targetFd, uint64_t vaBase) {
    App app;
    app.file = m.open(kPid, targetFd, minor);
    uint32_t gtt = m.createBo(app.file, 64 << 10, kGtt, 0, 1);
    uint32_t vis = m.createBo(app.file, 200 << 10, kVram, kVisible, 2);
    uint32_t inv = m.createBo(app.file, 300 << 10, kVram, kInvisible, 3);
    uint32_t gds = m.createBo(app.file, 4096, AMDGPU_GEM_DOMAIN_GDS, 0, 4);
    EXPECT_EQ(0, m.mapBo(app.file, gtt, vaBase, 0, 64 << 10));
    EXPECT_EQ(0, m.mapBo(app.file, vis, vaBase + (1 << 20), 0, 200 << 10));
    EXPECT_EQ(0, m.mapBo(app.file, vis, vaBase + (2 << 20), 4096, 8192, AMDGPU_VM_PAGE_READABLE));
    EXPECT_EQ(0, m.mapBo(app.file, inv, vaBase + (4 << 20), 0, 300 << 10));
    EXPECT_EQ(0, m.mapBo(app.file, inv, vaBase + (8 << 20), 64 << 10, 64 << 10));
    app.handles = {gtt, vis, inv, gds};
    for (uint32_t h : {gtt, vis, inv})
        m.mmapOffset(app.file, h);
    return app;
}

TEST(DrmDumpRestore, SeveralBosAndMappingsComeBackWithTheirHandlesContentsAndAddresses) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    App app = makeRichApp(src, 128, 5, 0x7f0000000000ull);
    Images images;
    auto dumped = dump(src, images, kPid, {{app.file, 7}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    EXPECT_TRUE(images.store->exists("amdgpu-renderD-7.img"));
    EXPECT_TRUE(images.store->exists("amdgpu-topology.img"));
    EXPECT_TRUE(images.store->exists(formats::drmPagesImageName(7, 128, 2)));  // the SDMA BO
    EXPECT_FALSE(images.store->exists(formats::drmPagesImageName(7, 128, 3))); // GDS: no contents

    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    ASSERT_TRUE(dev->ownsImage(7).value());
    EXPECT_FALSE(dev->ownsImage(8).value());
    auto fd = dev->restoreFile(7);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    for (uint32_t h : app.handles)
        expectSameBo(src, app.file, dst, fd.value(), h);
    EXPECT_EQ(dst.kernel->fileOf(fd.value())->handles.size(), app.handles.size());
    // CPU mappings: the old offset of each BO leads to its new offset, through a fd criu owns.
    // The invisible VRAM BO (NO_CPU_ACCESS) has none: GEM_MMAP refuses it, then and now.
    EXPECT_EQ(dst.kernel->fileOf(fd.value())->handles.at(app.handles[2])->mmapOffset, 0u);
    for (uint32_t h : {app.handles[0], app.handles[1]}) {
        uint64_t oldOffset = src.kernel->fileOf(app.file.fd)->handles.at(h)->mmapOffset;
        auto answer = dev->updateVmaMap({"/dev/dri/renderD128", 0x1000, oldOffset});
        ASSERT_TRUE(answer.ok()) << answer.error().describe();
        ASSERT_TRUE(answer.value().has_value());
        auto restoredBo = dst.kernel->fileOf(fd.value())->handles.at(h);
        EXPECT_EQ(answer.value()->newPgoff, restoredBo->mmapOffset);
        EXPECT_EQ(dst.kernel->fileOf(answer.value()->fd), dst.kernel->fileOf(fd.value()));
        dst.kernel->close(answer.value()->fd);
    }
    EXPECT_FALSE(dev->updateVmaMap({"/dev/zero", 0, 0}).value().has_value());
    EXPECT_FALSE(dev->updateVmaMap({"/dev/dri/renderD128", 0, 0xdead000}).ok());
    EXPECT_TRUE(dev->resumeProcess(kPid).value());
    EXPECT_TRUE(dev->finishRestore(true).ok());
}

TEST(DrmDumpRestore, BoFilesAreReadAsCriuReadsThemWhateverTheirSizeHeaderSays) {
    // CRIU's development branch writes the header of these files from an uninitialised
    // variable and skips it at restore: only the BO's size in the image counts.
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    App app = makeRichApp(src, 128, 5, 0x7f0000000000ull);
    Images images;
    ASSERT_TRUE(dump(src, images, kPid, {{app.file, 7}}).ok());
    for (uint32_t index = 0; index < 3; ++index) {
        std::string path = images.dir / formats::drmPagesImageName(7, 128, index);
        std::string bytes = testsupport::readFile(path);
        ASSERT_GE(bytes.size(), 8u);
        uint64_t garbage = 0xdeadbeefcafe0000ull + index;
        memcpy(bytes.data(), &garbage, 8);
        testsupport::writeFile(path, bytes);
    }
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(7);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    for (uint32_t h : app.handles)
        expectSameBo(src, app.file, dst, fd.value(), h);
}

TEST(DrmDumpRestore, ABoFileWithoutItsSizeHeaderIsRefused) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    App app = makeRichApp(src, 128, 5, 0x7f0000000000ull);
    Images images;
    ASSERT_TRUE(dump(src, images, kPid, {{app.file, 7}}).ok());
    std::string path = images.dir / formats::drmPagesImageName(7, 128, 1);
    testsupport::writeFile(path, testsupport::readFile(path).substr(8));
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto fd = makeDevice(dst, images)->restoreFile(7);
    ASSERT_FALSE(fd.ok());
    EXPECT_NE(fd.error().describe().find("amdgpu-drm-pages-7-128-0001.img is truncated: it holds "
                                         "204792 bytes after its size header, the BO holds 204800"),
              std::string::npos)
        << fd.error().describe();
}

TEST(DrmDumpRestore, OlderCriuThatOnlyDumpsFilesGetsTheSameImages) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    App app = makeRichApp(src, 128, 9, 0x100000000ull);
    Images images;
    auto dumped = dump(src, images, kPid, {{app.file, 3}}, /*deviceHooks=*/false);
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(3);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    for (uint32_t h : app.handles)
        expectSameBo(src, app.file, dst, fd.value(), h);
}

TEST(DrmDumpRestore, TwoRenderNodesInOneProcessKeepTheirMmapOffsetsApart) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    src.addGpu(gpuAt(129), "0000:43:00.0");
    App a = makeRichApp(src, 128, 5, 0x200000000ull);
    App b = makeRichApp(src, 129, 6, 0x200000000ull);
    // Each GPU numbers its mmap offsets alike: offsets alone cannot tell the BOs apart.
    uint64_t offA = src.kernel->fileOf(a.file.fd)->handles.at(a.handles[0])->mmapOffset;
    uint64_t offB = src.kernel->fileOf(b.file.fd)->handles.at(b.handles[0])->mmapOffset;
    ASSERT_EQ(offA, offB);
    Images images;
    ASSERT_TRUE(dump(src, images, kPid, {{a.file, 1}, {b.file, 2}}).ok());

    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    dst.addGpu(gpuAt(129), "0000:43:00.0");
    auto dev = makeDevice(dst, images);
    auto fa = dev->restoreFile(1);
    auto fb = dev->restoreFile(2);
    ASSERT_TRUE(fa.ok() && fb.ok());
    for (uint32_t h : a.handles)
        expectSameBo(src, a.file, dst, fa.value(), h);
    for (uint32_t h : b.handles)
        expectSameBo(src, b.file, dst, fb.value(), h);
    auto ansA = dev->updateVmaMap({"/dev/dri/renderD128", 0x1000, offA}).value();
    auto ansB = dev->updateVmaMap({"/dev/dri/renderD129", 0x2000, offB}).value();
    ASSERT_TRUE(ansA && ansB);
    EXPECT_EQ(dst.kernel->fileOf(ansA->fd)->minor, 128u);
    EXPECT_EQ(dst.kernel->fileOf(ansB->fd)->minor, 129u);
    EXPECT_EQ(ansA->newPgoff, dst.kernel->fileOf(fa.value())->handles.at(a.handles[0])->mmapOffset);
    EXPECT_EQ(ansB->newPgoff, dst.kernel->fileOf(fb.value())->handles.at(b.handles[0])->mmapOffset);
}

TEST(DrmDumpRestore, ImportedBoIsReimportedFromItsExporterEvenWhenRestoredFirst) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    src.addGpu(gpuAt(129), "0000:43:00.0");
    AppFile exp = src.open(kPid, 5, 128);
    AppFile imp = src.open(kPid, 6, 129);
    uint32_t shared = src.createBo(exp, 128 << 10, kGtt, 0, 9);
    uint32_t own = src.createBo(imp, 64 << 10, kVram, kInvisible, 10);
    uint32_t imported = src.share(exp, shared, imp);
    ASSERT_TRUE(src.kernel->fileOf(imp.fd)->handles.at(imported)->imported);
    ASSERT_EQ(0, src.mapBo(exp, shared, 0x400000000ull, 0, 128 << 10));
    ASSERT_EQ(0, src.mapBo(imp, imported, 0x500000000ull, 0, 128 << 10));
    ASSERT_EQ(0, src.mapBo(imp, own, 0x600000000ull, 0, 64 << 10));
    uint64_t importOffset = src.mmapOffset(imp, imported);
    Images images;
    auto dumped = dump(src, images, kPid, {{exp, 1}, {imp, 2}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    // The importer's file has its own copy too, framed like every image: CRIU's plugin restores
    // an imported BO's contents from it (this backend re-imports the exporter's).
    std::vector<std::byte> shared0 = src.contents(exp.fd, shared);
    std::string copy = testsupport::readFile(
        images.dir / formats::drmPagesImageName(2, 129, imported == 1 ? 0 : 1));
    ASSERT_EQ(copy.size(), 8 + shared0.size());
    EXPECT_EQ(0, memcmp(copy.data() + 8, shared0.data(), shared0.size()));

    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    dst.addGpu(gpuAt(129), "0000:43:00.0");
    auto dev = makeDevice(dst, images);
    auto fi = dev->restoreFile(2); // the importer first: its import waits for the exporter
    ASSERT_TRUE(fi.ok()) << fi.error().describe();
    // Until its exporter is restored, the import's number holds a placeholder of system memory.
    auto placeholder = dst.kernel->fileOf(fi.value())->handles.at(imported);
    EXPECT_EQ(placeholder->domains, uint64_t{AMDGPU_GEM_DOMAIN_CPU});
    EXPECT_EQ(placeholder->size, drm::kPlaceholderBytes);
    auto early = dev->updateVmaMap({"/dev/dri/renderD129", 0x1000, importOffset});
    EXPECT_FALSE(early.ok());
    auto fe = dev->restoreFile(1);
    ASSERT_TRUE(fe.ok()) << fe.error().describe();
    expectSameBo(src, exp, dst, fe.value(), shared);
    expectSameBo(src, imp, dst, fi.value(), own);
    auto restoredImport = dst.kernel->fileOf(fi.value())->handles.at(imported);
    EXPECT_TRUE(restoredImport->imported);
    EXPECT_EQ(restoredImport->storage, dst.kernel->fileOf(fe.value())->handles.at(shared)->storage)
        << "the importer must share the exporter's memory";
    EXPECT_TRUE(src.contents(imp.fd, imported) == dst.contents(fi.value(), imported));
    auto late = dev->updateVmaMap({"/dev/dri/renderD129", 0x1000, importOffset});
    ASSERT_TRUE(late.ok()) << late.error().describe();
    EXPECT_TRUE(dev->resumeProcess(kPid).value());
}

TEST(DrmDumpRestore, BoSharedBetweenTwoFilesOfOneGpuStaysOneBo) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f1 = src.open(kPid, 5, 128);
    AppFile f2 = src.open(kPid, 6, 128);
    uint32_t h1 = src.createBo(f1, 64 << 10, kGtt, 0, 5);
    uint32_t h2 = src.share(f1, h1, f2); // same device: the same GEM object, not flagged import
    ASSERT_FALSE(src.kernel->fileOf(f2.fd)->handles.at(h2)->imported);
    Images images;
    ASSERT_TRUE(dump(src, images, kPid, {{f1, 1}, {f2, 2}}).ok());
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    auto r1 = dev->restoreFile(1);
    auto r2 = dev->restoreFile(2);
    ASSERT_TRUE(r1.ok() && r2.ok());
    EXPECT_EQ(dst.kernel->fileOf(r1.value())->handles.at(h1),
              dst.kernel->fileOf(r2.value())->handles.at(h2));
    EXPECT_TRUE(src.contents(f1.fd, h1) == dst.contents(r2.value(), h2));
}

TEST(DrmDumpRestore, StagingCopiesNeverCollideWithTheApplicationsAddresses) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    // The application's BOs sit exactly where libdrm's VA manager hands out staging addresses.
    std::vector<uint32_t> handles;
    for (int i = 0; i < 4; ++i) {
        uint32_t h = src.createBo(f, 256 << 10, kVram, kInvisible, static_cast<uint8_t>(20 + i));
        ASSERT_EQ(0, src.mapBo(f, h, kLibdrmVaBase + i * (256ull << 10), 0, 256 << 10));
        handles.push_back(h);
    }
    Images images;
    auto dumped = dump(src, images, kPid, {{f, 4}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();

    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(4);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    for (uint32_t h : handles)
        expectSameBo(src, f, dst, fd.value(), h);
    uint64_t client = dst.kernel->fileOf(fd.value())->clientId;
    // The staging copies did use the application's addresses, in a VM of their own.
    bool overlapped = false;
    for (const auto& [vmClient, m] : dst.kernel->libdrmMaps) {
        EXPECT_NE(vmClient, client) << "a staging mapping went into the restored file's VM";
        if (m.addr < kLibdrmVaBase + 4 * (256ull << 10) && m.addr + m.size > kLibdrmVaBase)
            overlapped = true;
    }
    EXPECT_TRUE(overlapped) << "the test must place the application where staging goes";
    // Every content copy finished before the first BO took its final address.
    const auto& ev = dst.kernel->events;
    std::string firstMap = "map f" + std::to_string(client);
    auto mapAt = std::find_if(ev.begin(), ev.end(),
                              [&](const std::string& e) { return e.rfind(firstMap, 0) == 0; });
    auto lastSdma = std::find_if(ev.rbegin(), ev.rend(),
                                 [](const std::string& e) { return e.rfind("sdma", 0) == 0; });
    ASSERT_NE(mapAt, ev.end());
    ASSERT_NE(lastSdma, ev.rend());
    EXPECT_LT(std::distance(ev.begin(), lastSdma.base()) - 1, std::distance(ev.begin(), mapAt));
    dev.reset();
    EXPECT_EQ(dst.kernel->liveLibdrmObjects(), 0u);
}

TEST(DrmDumpRestore, RestoreOntoRemappedMinorsOpensTheMatchingGpu) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    App app = makeRichApp(src, 128, 5, 0x300000000ull);
    Images images;
    ASSERT_TRUE(dump(src, images, kPid, {{app.file, 1}}).ok());

    FakeMachine dst;
    GpuSpec other = gpuAt(128);
    other.deviceId = 0x73bf; // a different GPU model first
    other.family = AMDGPU_FAMILY_NV;
    dst.addGpu(other, "0000:0a:00.0");
    dst.addGpu(gpuAt(131), "0000:c1:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    EXPECT_EQ(dst.kernel->fileOf(fd.value())->minor, 131u);
    for (uint32_t h : app.handles)
        expectSameBo(src, app.file, dst, fd.value(), h);
    // criu still names the mapping by the checkpointed node.
    uint64_t old = src.kernel->fileOf(app.file.fd)->handles.at(app.handles[0])->mmapOffset;
    auto ans = dev->updateVmaMap({"/dev/dri/renderD128", 0x1000, old});
    ASSERT_TRUE(ans.ok() && ans.value());
    EXPECT_EQ(dst.kernel->fileOf(ans.value()->fd)->minor, 131u);
}

TEST(DrmDumpRestore, ManyBosAndMappingsGrowTheListArrays) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    src.kernel->mappingInfoEnospc = true;
    AppFile f = src.open(kPid, 5, 128);
    std::vector<uint32_t> handles;
    for (int i = 0; i < 40; ++i)
        handles.push_back(src.createBo(f, 8192, kGtt, 0, static_cast<uint8_t>(i)));
    for (int v = 0; v < 9; ++v)
        ASSERT_EQ(0, src.mapBo(f, handles[0], 0x800000000ull + v * 0x10000ull, 0, 4096));
    Images images;
    auto dumped = dump(src, images, kPid, {{f, 1}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    auto image = formats::readRenderNodeImage(*images.store, 1);
    ASSERT_TRUE(image.ok());
    EXPECT_EQ(image.value().bos.size(), 40u);
    EXPECT_EQ(image.value().bos[0].vms.size(), 9u);
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    for (uint32_t h : handles)
        expectSameBo(src, f, dst, fd.value(), h);
}

TEST(DrmDumpRestore, HandlesFreedByTheApplicationAreRecreatedWithTheirNumbers) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    std::vector<uint32_t> handles;
    for (int i = 0; i < 6; ++i)
        handles.push_back(src.createBo(f, 4096, kGtt, 0, static_cast<uint8_t>(i)));
    // Free handles 1, 2 and 4: the restore creates BOs that land on them first.
    for (uint32_t h : {1u, 2u, 4u})
        ASSERT_EQ(0, src.closeBo(f, h));
    Images images;
    ASSERT_TRUE(dump(src, images, kPid, {{f, 1}}).ok());
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    std::vector<uint32_t> got;
    for (const auto& [h, bo] : dst.kernel->fileOf(fd.value())->handles)
        got.push_back(h);
    EXPECT_EQ(got, (std::vector<uint32_t>{3, 5, 6}));
    for (uint32_t h : {3u, 5u, 6u})
        expectSameBo(src, f, dst, fd.value(), h);
}

TEST(DrmDumpRestore, FileOwnerFoundByKcmpWhenFdinfoHasNoClientId) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    src.createBo(f, 4096, kGtt, 0, 1);
    testsupport::writeFile(src.paths.procRoot + "/100/fdinfo/5", "pos:\t0\n");
    Images images;
    auto dev = makeDevice(src, images);
    hal::FileRef ref = src.criuFile(f, 1);
    testsupport::writeFile(src.paths.procRoot + "/self/fdinfo/" + std::to_string(ref.fd),
                           "pos:\t0\n");
    auto r = dev->dumpFile(ref);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(images.store->exists("amdgpu-renderD-1.img"));
}

TEST(DrmDumpRestore, FileNobodyHoldsIsAClearError) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    Images images;
    auto dev = makeDevice(src, images);
    hal::FileRef ref = src.criuFile(f, 1);
    testsupport::writeFile(src.paths.procRoot + "/self/fdinfo/" + std::to_string(ref.fd),
                           "drm-client-id:\t999\n");
    auto r = dev->dumpFile(ref);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("no process"), std::string::npos);
}

TEST(DrmDumpRestore, ProcessWithoutRenderNodesHasNothingToPause) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    Images images;
    auto dev = makeDevice(src, images);
    EXPECT_FALSE(dev->pauseProcess(321).value());
}

TEST(DrmDumpRestore, PidfdGetfdRefusedIsAClearError) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    src.open(kPid, 5, 128);
    src.kernel->pidGetFdErrno = EPERM;
    Images images;
    auto dev = makeDevice(src, images);
    auto r = dev->pauseProcess(kPid);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("pidfd_getfd"), std::string::npos);
}

TEST(DrmDumpRestore, KernelWithoutListHandlesFailsTheDumpAndSaysWhy) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    src.createBo(f, 4096, kGtt, 0, 1);
    src.kernel->profile = KernelProfile::Before6_18;
    Images images;
    auto dev = makeDevice(src, images);
    ASSERT_TRUE(dev->pauseProcess(kPid).value());
    auto r = dev->checkpointProcess(kPid);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), base::ErrorCode::NotSupported);
    EXPECT_NE(r.error().describe().find("GEM_LIST_HANDLES (Linux 6.18+)"), std::string::npos);
    EXPECT_EQ(dev->phaseOf(kPid), hal::DumpPhase::Failed);
}

TEST(DrmDumpRestore, SdmaHangAtDumpIsReportedWithTheBo) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    src.createBo(f, 16384, kVram, 0, 1);
    src.kernel->fakeLibdrm().hang(true);
    Images images;
    auto r = dump(src, images, kPid, {{f, 1}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("did not complete"), std::string::npos);
    EXPECT_NE(r.error().describe().find("BO 0 (handle 1"), std::string::npos);
}

// Work the process submitted before it was frozen still writes its BOs: the dump waits for it
// (GEM_WAIT_IDLE), so the saved contents are what the work leaves, never a torn copy.
TEST(DrmDumpRestore, ContentsAreSavedAfterTheGpuWorkInFlightHasFinished) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    uint32_t gtt = src.createBo(f, 8192, kGtt, 0, 1);
    uint32_t vram = src.createBo(f, 16384, kVram, kInvisible, 2);
    src.kernel->submitWork(f.fd, gtt, 2000000, std::vector<std::byte>(8192, std::byte{0x11}));
    src.kernel->submitWork(f.fd, vram, 3000000, std::vector<std::byte>(16384, std::byte{0x22}));
    Images images;
    auto dumped = dump(src, images, kPid, {{f, 1}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    EXPECT_EQ(dst.contents(fd.value(), gtt), std::vector<std::byte>(8192, std::byte{0x11}));
    EXPECT_EQ(dst.contents(fd.value(), vram), std::vector<std::byte>(16384, std::byte{0x22}));
}

TEST(DrmDumpRestore, GpuWorkThatNeverFinishesFailsTheDumpNamingTheBoAndLeavesNothingPaused) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    src.createBo(f, 4096, kGtt, 0, 1);
    uint32_t hung = src.createBo(f, 8192, kVram, kVisible, 2);
    src.kernel->submitWork(f.fd, hung, Bo::kNever, {});
    size_t fdsBefore = src.kernel->openFds();
    uint64_t start = src.kernel->monotonicNs();
    Images images;
    auto dev = makeDevice(src, images);
    ASSERT_TRUE(dev->pauseProcess(kPid).value());
    ASSERT_TRUE(dev->checkpointProcess(kPid).ok());
    hal::FileRef ref = src.criuFile(f, 1);
    ASSERT_TRUE(dev->claimFile(ref).value());
    auto r = dev->dumpFile(ref);
    src.kernel->close(ref.fd);
    ASSERT_FALSE(r.ok());
    std::string m = r.error().describe();
    EXPECT_NE(m.find("BO 1 (handle 2, 8192 bytes) of /dev/dri/renderD128 is still in use by the "
                     "GPU after 10 s"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("process left running"), std::string::npos) << m;
    EXPECT_EQ(src.kernel->monotonicNs(), start + drm::kGpuIdleTimeoutNs) << "a bounded wait";
    EXPECT_EQ(dev->phaseOf(kPid), hal::DumpPhase::Failed);
    EXPECT_EQ(src.kernel->openFds(), fdsBefore) << "the failed dump let go of its fds";
    EXPECT_FALSE(images.store->exists(formats::drmPagesImageName(1, 128, 1)));
}

TEST(DrmDumpRestore, WaitIdleRefusedByTheKernelFailsTheDumpNamingTheBo) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    src.createBo(f, 4096, kGtt, 0, 1);
    src.kernel->failIoctl(DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE, 1, EIO);
    Images images;
    auto r = dump(src, images, kPid, {{f, 1}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("GEM_WAIT_IDLE of BO handle 1 failed"), std::string::npos)
        << r.error().describe();
}

// A pause that fails half-way (the second fd is gone by the time pidfd_getfd asks for it) is
// not unpaused by the HAL: the fds it took must be closed at once, not when the device goes.
TEST(DrmDumpRestore, FailedPauseClosesTheFdsItHadTaken) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    src.open(kPid, 5, 128);
    src.open(kPid, 6, 128);
    src.kernel->forgetProcessFd(kPid, 6);
    size_t fdsBefore = src.kernel->openFds();
    Images images;
    auto dev = makeDevice(src, images);
    auto r = dev->pauseProcess(kPid);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("cannot get fd 6"), std::string::npos);
    EXPECT_EQ(src.kernel->openFds(), fdsBefore);
    EXPECT_EQ(dev->phaseOf(kPid), hal::DumpPhase::Failed);
}

TEST(DrmDumpRestore, SdmaOnPreGfx9GpuIsRefusedClearly) {
    FakeMachine src;
    GpuSpec old = gpuAt(128);
    old.family = AMDGPU_FAMILY_VI;
    src.addGpu(old, "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    src.createBo(f, 16384, kVram, 0, 1);
    Images images;
    auto r = dump(src, images, kPid, {{f, 1}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("gfx9"), std::string::npos);
}

TEST(DrmDumpRestore, UnexportableBoIsStillDumpedAndRestored) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    uint32_t h = src.createBo(f, 8192, kGtt, AMDGPU_GEM_CREATE_VM_ALWAYS_VALID, 1);
    ASSERT_EQ(0, src.mapBo(f, h, 0x900000000ull, 0, 8192));
    Images images;
    ASSERT_TRUE(dump(src, images, kPid, {{f, 1}}).ok());
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    expectSameBo(src, f, dst, fd.value(), h);
}

// A VRAM BO the CPU cannot map and that is not per-VM (what Mesa makes exportable): its contents
// travel by SDMA through its dma-buf; the CPU mmap offset GEM_MMAP refuses is neither asked at
// dump nor at restore.
TEST(DrmDumpRestore, AnExportableNoCpuAccessVramBoTravelsBySdmaWithoutACpuMapping) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile f = src.open(kPid, 5, 128);
    uint32_t h = src.createBo(f, 3 << 20, kVram, kInvisible, 7);
    ASSERT_EQ(0, src.mapBo(f, h, 0x800000000ull, 0, 3 << 20));
    EXPECT_EQ(src.mmapOffset(f, h), 0u) << "GEM_MMAP refuses a NO_CPU_ACCESS BO";
    Images images;
    auto dumped = dump(src, images, kPid, {{f, 1}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    EXPECT_GT(src.kernel->fakeLibdrm().copyPackets(), 0u) << "copied by SDMA";
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    expectSameBo(src, f, dst, fd.value(), h); // every byte, and the mapping
    EXPECT_EQ(dst.kernel->fileOf(fd.value())->handles.at(h)->mmapOffset, 0u);
}

TEST(DrmDumpRestore, FailedRestoreClosesWhatItOpened) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    App app = makeRichApp(src, 128, 5, 0x300000000ull);
    Images images;
    ASSERT_TRUE(dump(src, images, kPid, {{app.file, 1}}).ok());
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    dst.kernel->failIoctl(DRM_IOCTL_AMDGPU_GEM_VA, 2, ENOMEM);
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_FALSE(fd.ok());
    EXPECT_NE(fd.error().describe().find("GEM_VA MAP"), std::string::npos);
    EXPECT_TRUE(dev->finishRestore(false).ok());
    dev.reset();
    EXPECT_EQ(dst.kernel->openFds(), 0u);
}

} // namespace
} // namespace fakedrm

namespace fakedrm {
namespace {

uint64_t allocatedBytes(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return static_cast<uint64_t>(st.st_blocks) * 512;
}

/// Restores criu's file `id` of `images` on a new machine like `src` and expects every BO of
/// `app` back; then resumes.
void expectRestoredWhole(FakeMachine& src, const App& app, Images& images, uint32_t id,
                         const std::string& privateKey = "") {
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    dst.settings.contentPrivateKey = privateKey;
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(id);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    for (uint32_t h : app.handles)
        expectSameBo(src, app.file, dst, fd.value(), h);
    EXPECT_TRUE(dev->resumeProcess(kPid).value());
    EXPECT_TRUE(dev->finishRestore(true).ok());
}

/// A process dumped twice: into `first`, then, after `change` ran, into `second` against it.
struct TwoDumps {
    FakeMachine src;
    App app;
    Images first, second;
    template <typename Change> explicit TwoDumps(Change change) {
        src.addGpu(gpuAt(128), "0000:03:00.0");
        app = makeRichApp(src, 128, 5, 0x7f0000000000ull);
        EXPECT_TRUE(dump(src, first, kPid, {{app.file, 7}}).ok());
        change(*this);
        src.settings.parentImages =
            std::filesystem::relative(first.dir.path(), second.dir.path()).string();
        auto dumped = dump(src, second, kPid, {{app.file, 8}}); // criu's ids change between dumps
        EXPECT_TRUE(dumped.ok()) << dumped.error().describe();
    }
};

TEST(DrmIncremental, ADumpAgainstTheLastHoldsOnlyTheChangedBytesAndTheChainRestoresEveryByte) {
    // One byte of the SDMA BO changes; the GTT and visible VRAM BOs stay as they were.
    TwoDumps t([](TwoDumps& t) {
        auto sdmaBo = t.src.kernel->fileOf(t.app.file.fd)->handles.at(t.app.handles[2]);
        (*sdmaBo->storage)[100] ^= std::byte{0x5a};
    });
    for (uint32_t index = 0; index < 3; ++index) {
        std::string plain = formats::drmPagesImageName(8, 128, index);
        EXPECT_FALSE(t.second.store->exists(plain)) << plain << ": CRIU's plugin must not find it";
        EXPECT_TRUE(t.second.store->exists(datapath::deltaImageName(plain))) << plain;
    }
    auto delta = [&](uint32_t index) {
        return t.second.dir.path() + "/" +
               datapath::deltaImageName(formats::drmPagesImageName(8, 128, index));
    };
    EXPECT_LE(allocatedBytes(delta(0)), 8192u) << "the unchanged GTT BO is left out";
    EXPECT_GE(allocatedBytes(delta(2)), 4096u) << "the chunk holding the changed byte is written";
    EXPECT_LT(allocatedBytes(delta(2)), 300u << 10)
        << "the other chunks of the SDMA BO are left out";

    expectRestoredWhole(t.src, t.app, t.second, 8);
}

TEST(DrmIncremental, AChainWhoseParentChangedIsRefusedBeforeARenderNodeIsOpened) {
    TwoDumps t([](TwoDumps&) {});
    std::string record = t.first.dir.path() + "/" + formats::chunkMapImageName(7);
    std::string bytes = testsupport::readFile(record);
    bytes.back() = static_cast<char>(bytes.back() ^ 1); // the last byte of its last file name
    testsupport::writeFile(record, bytes);

    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, t.second);
    size_t fdsBefore = dst.kernel->openFds();
    auto fd = dev->restoreFile(8);
    ASSERT_FALSE(fd.ok());
    EXPECT_NE(
        fd.error().describe().find(formats::chunkMapImageName(7) + ": the parent image changed"),
        std::string::npos)
        << fd.error().describe();
    EXPECT_EQ(dst.kernel->openFds(), fdsBefore) << "no render node was opened";
}

TEST(DrmCompressed, ADumpWithLz4PacksEveryBoUnderOurNamesAndRestoresEveryByte) {
    FakeMachine src;
    src.addGpu(gpuAt(128), "0000:03:00.0");
    App app = makeRichApp(src, 128, 5, 0x7f0000000000ull);
    src.settings.contentCompression = "lz4";
    Images images;
    auto dumped = dump(src, images, kPid, {{app.file, 7}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    for (uint32_t index = 0; index < 3; ++index) {
        std::string plain = formats::drmPagesImageName(7, 128, index);
        EXPECT_FALSE(images.store->exists(plain)) << plain << ": CRIU's plugin must not find it";
        EXPECT_TRUE(images.store->exists(formats::packedImageName(plain))) << plain;
    }
    expectRestoredWhole(src, app, images, 7);
}

TEST(DrmCompressed, TheDirectWriteOptionDecidesWhetherPackedFilesMayBypassThePageCache) {
    for (bool direct : {true, false}) {
        FakeMachine src;
        src.addGpu(gpuAt(128), "0000:03:00.0");
        App app = makeRichApp(src, 128, 5, 0x7f0000000000ull);
        src.settings.contentCompression = "lz4";
        src.settings.directWrite = direct;
        Images images;
        images.store->setDirectWrites(!direct); // what the option says wins
        auto dumped = dump(src, images, kPid, {{app.file, 7}});
        ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
        EXPECT_EQ(images.store->directWrites(), direct);
        expectRestoredWhole(src, app, images, 7);
    }
}

/// A machine with a rich app on renderD128 whose dumps encrypt with `cipher` for a test
/// certificate (its private key in `keys`).
struct EncryptingSource {
    explicit EncryptingSource(const char* cipher) {
        src.addGpu(gpuAt(128), "0000:03:00.0");
        app = makeRichApp(src, 128, 5, 0x7f0000000000ull);
        src.settings.contentEncryption = cipher;
        src.settings.contentCertificate = keys.certificate;
    }
    testsupport::TempDir keyDir;
    testsupport::KeyFiles keys = testsupport::writeTestKeys(keyDir.path());
    FakeMachine src;
    App app;
};

TEST(DrmEncrypted, AnEncryptedCompressedChainRestoresEveryByteWithTheKeyAndIsRefusedWithoutIt) {
    EncryptingSource source("chacha20-poly1305");
    auto& [keyDir, keys, src, app] = source;
    src.settings.contentCompression = "zstd:1";
    src.settings.contentPrivateKey = keys.privateKey; // the second dump reuses the first's key
    Images first, second;
    ASSERT_TRUE(dump(src, first, kPid, {{app.file, 7}}).ok());
    src.settings.parentImages =
        std::filesystem::relative(first.dir.path(), second.dir.path()).string();
    auto dumped = dump(src, second, kPid, {{app.file, 8}});
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    for (Images* images : {&first, &second})
        EXPECT_TRUE(images->store->exists(formats::kSealImageName));
    for (uint32_t index = 0; index < 3; ++index) {
        std::string plain = formats::drmPagesImageName(8, 128, index);
        EXPECT_FALSE(second.store->exists(plain)) << plain << ": CRIU's plugin must not find it";
        EXPECT_TRUE(
            second.store->exists(formats::packedImageName(datapath::deltaImageName(plain))));
    }
    Images fresh; // a restore that has read no key yet, of a copy of the second dump
    std::filesystem::remove_all(fresh.dir.path());
    std::filesystem::copy(second.dir.path(), fresh.dir.path());
    fresh.store = formats::openDirectoryStore(fresh.dir.path()).value();
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, fresh);
    auto fd = dev->restoreFile(8);
    ASSERT_FALSE(fd.ok()) << "restored without the key";
    EXPECT_NE(fd.error().describe().find("content-private-key"), std::string::npos)
        << fd.error().describe();
    ASSERT_TRUE(dev->finishRestore(false).ok());
    expectRestoredWhole(src, app, second, 8, keys.privateKey);
}

// The render-node image of an encrypted dump is tagged under its key (formats/image_tag.h): two
// BOs' handles swapped in it by someone without the key is refused at restore, naming the image
// and its tag, before any BO is made.
TEST(DrmEncrypted, TwoBosHandlesSwappedInTheMetadataAreRefusedNamingTheImage) {
    EncryptingSource source("aes-256-gcm");
    auto& [keyDir, keys, src, app] = source;
    Images images;
    ASSERT_TRUE(dump(src, images, kPid, {{app.file, 7}}).ok());
    auto plain = formats::openDirectoryStore(images.dir.path()).value(); // no key: writes no tag
    auto image = formats::readRenderNodeImage(*plain, 7);
    ASSERT_TRUE(image.ok()) << image.error().describe();
    ASSERT_GE(image->bos.size(), 2u);
    std::swap(image->bos[0].handle, image->bos[1].handle);
    std::filesystem::remove(images.dir.path() + "/" + formats::renderNodeImageName(7));
    ASSERT_TRUE(formats::writeRenderNodeImage(*plain, *image).ok());
    images.store = formats::openDirectoryStore(images.dir.path()).value();
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    dst.settings.contentPrivateKey = keys.privateKey;
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(7);
    ASSERT_FALSE(fd.ok()) << "restored with two BOs' handles swapped";
    EXPECT_NE(fd.error().describe().find(
                  "amdgpu-renderD-7.img: does not match its tag amdgpu-tag-renderD-7.img"),
              std::string::npos)
        << fd.error().describe();
    ASSERT_TRUE(dev->finishRestore(false).ok());
    dev.reset();
    EXPECT_EQ(dst.kernel->openFds(), 0u);
}

} // namespace
} // namespace fakedrm

namespace fakedrm {
namespace {

/// One process with two files: `exp` (renderD128, file id 2) exports a BO that `imp`
/// (renderD129, file id 1) imports into a number its application had freed, below a BO of its
/// own and above a number still free. Handles of `imp`: 1 own, 2 import, 3 free, 4 own.
struct ImportIntoFreedNumber {
    ImportIntoFreedNumber() {
        for (FakeMachine* m : {&src, &dst}) {
            m->addGpu(gpuAt(128), "0000:03:00.0");
            m->addGpu(gpuAt(129), "0000:43:00.0");
        }
        exp = src.open(kPid, 5, 128);
        imp = src.open(kPid, 6, 129);
        shared = src.createBo(exp, 64 << 10, kGtt, 0, 7);
        for (uint8_t seed = 1; seed <= 4; ++seed)
            src.createBo(imp, 8192, kGtt, 0, seed);
        for (uint32_t h : {2u, 3u})
            EXPECT_EQ(0, src.closeBo(imp, h));
        EXPECT_EQ(src.share(exp, shared, imp), 2u);
        EXPECT_EQ(0, src.mapBo(imp, 2, 0x500000000ull, 0, 64 << 10));
        EXPECT_TRUE(dump(src, images, kPid, {{imp, 1}, {exp, 2}}).ok());
    }
    std::vector<uint32_t> handlesOf(int fd) {
        std::vector<uint32_t> out;
        for (const auto& [h, bo] : dst.kernel->fileOf(fd)->handles)
            out.push_back(h);
        return out;
    }
    FakeMachine src, dst;
    Images images;
    AppFile exp, imp;
    uint32_t shared = 0;
};

// The restore never calls GEM_CHANGE_HANDLE: on 7.x it is EINVAL, on 6.18.0-6.18.35 it runs but
// was disabled as unsafe, before 6.18 it does not exist; the restore needs no ioctl of 6.18.
TEST(DrmHandles, AnImportIntoAFreedNumberKeepsItsHandleOnEveryKernelWithoutChangeHandle) {
    for (KernelProfile profile :
         {KernelProfile::Linux7, KernelProfile::Linux6_18, KernelProfile::Before6_18}) {
        SCOPED_TRACE(static_cast<int>(profile));
        ImportIntoFreedNumber t;
        t.dst.kernel->profile = profile;
        auto dev = makeDevice(t.dst, t.images);
        auto fe = dev->restoreFile(2);
        ASSERT_TRUE(fe.ok()) << fe.error().describe();
        auto fi = dev->restoreFile(1);
        ASSERT_TRUE(fi.ok()) << fi.error().describe();
        EXPECT_EQ(t.handlesOf(fi.value()), (std::vector<uint32_t>{1, 2, 4}));
        for (uint32_t h : {1u, 4u})
            expectSameBo(t.src, t.imp, t.dst, fi.value(), h);
        expectSameBo(t.src, t.imp, t.dst, fi.value(), 2);
        auto restored = t.dst.kernel->fileOf(fi.value())->handles.at(2);
        EXPECT_EQ(restored->storage,
                  t.dst.kernel->fileOf(fe.value())->handles.at(t.shared)->storage)
            << "handle 2 is the exporter's memory";
        EXPECT_EQ(t.dst.kernel->ioctlCounts[drm::kIoctlGemChangeHandle], 0);
    }
}

// Restored before its exporter, the import's number and the free number hold placeholders
// (every lower handle stays taken), and both are gone once the exporter is restored.
TEST(DrmHandles, AnImportRestoredBeforeItsExporterKeepsItsNumberAndTheFreeOneUntilThen) {
    ImportIntoFreedNumber t;
    auto dev = makeDevice(t.dst, t.images);
    auto fi = dev->restoreFile(1);
    ASSERT_TRUE(fi.ok()) << fi.error().describe();
    EXPECT_EQ(t.handlesOf(fi.value()), (std::vector<uint32_t>{1, 2, 3, 4}));
    auto fe = dev->restoreFile(2);
    ASSERT_TRUE(fe.ok()) << fe.error().describe();
    EXPECT_EQ(t.handlesOf(fi.value()), (std::vector<uint32_t>{1, 2, 4}));
    expectSameBo(t.src, t.imp, t.dst, fi.value(), 2);
    EXPECT_TRUE(t.dst.kernel->fileOf(fi.value())->handles.at(2)->imported);
    auto resumed = dev->resumeProcess(kPid);
    ASSERT_TRUE(resumed.ok()) << resumed.error().describe();
}

std::vector<std::string>& infoLines() {
    static std::vector<std::string> lines;
    return lines;
}

// The restore says once, not per file, how it gives BOs their handles.
TEST(DrmHandles, TheRestoreLogsItsHandleMethodOnce) {
    ImportIntoFreedNumber t;
    infoLines().clear();
    base::setLogSink([](base::LogLevel level, const char* line) {
        if (level == base::LogLevel::Info)
            infoLines().push_back(line);
    });
    base::setLogThreshold(base::LogLevel::Info);
    auto dev = makeDevice(t.dst, t.images);
    bool restored = dev->restoreFile(2).ok() && dev->restoreFile(1).ok();
    base::setLogSink(nullptr);
    base::setLogThreshold(base::LogLevel::Warn);
    ASSERT_TRUE(restored);
    auto method = std::count_if(infoLines().begin(), infoLines().end(), [](const std::string& l) {
        return l.find("lowest-free-handle order") != std::string::npos &&
               l.find("GEM_CHANGE_HANDLE is not used") != std::string::npos;
    });
    EXPECT_EQ(method, 1);
}

} // namespace
} // namespace fakedrm
