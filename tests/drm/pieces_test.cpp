// The small pieces of the backend: parsers, encodings, ioctl wrappers' error paths.
#include "bo_contents.h"
#include "bo_shares.h"
#include "drm_calls.h"
#include "drm_fixture.h"
#include "proc_files.h"
#include "render_nodes.h"

#include <filesystem>

namespace fakedrm {
namespace {

TEST(DrmPieces, RenderMinorOfPath) {
    EXPECT_EQ(drm::renderMinorOfPath("/dev/dri/renderD128"), 128);
    EXPECT_EQ(drm::renderMinorOfPath("renderD255"), 255);
    EXPECT_EQ(drm::renderMinorOfPath("/dev/dri/card0"), -1);
    EXPECT_EQ(drm::renderMinorOfPath("/dev/dri/renderD"), -1);
    EXPECT_EQ(drm::renderMinorOfPath("/dev/dri/renderD12x"), -1);
    EXPECT_EQ(drm::renderMinorOfPath("/dev/dri/renderD12345"), -1);
}

TEST(DrmPieces, PciLocation) {
    auto loc = drm::parsePciLocation("0002:c1:1f.7");
    ASSERT_TRUE(loc);
    EXPECT_EQ(loc->domain, 2u);
    EXPECT_EQ(loc->locationId(), (0xc1u << 8) | (0x1fu << 3) | 7u);
    EXPECT_FALSE(drm::parsePciLocation("card0"));
    EXPECT_FALSE(drm::parsePciLocation("0000:03:00.0x"));
}

TEST(DrmPieces, ContentPaths) {
    using drm::ContentPath;
    EXPECT_EQ(drm::contentPathFor(AMDGPU_GEM_DOMAIN_GTT, 0), ContentPath::Cpu);
    EXPECT_EQ(drm::contentPathFor(AMDGPU_GEM_DOMAIN_CPU, 0), ContentPath::Cpu);
    EXPECT_EQ(drm::contentPathFor(AMDGPU_GEM_DOMAIN_VRAM, 0), ContentPath::Sdma);
    EXPECT_EQ(drm::contentPathFor(AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED),
              ContentPath::Cpu);
    EXPECT_EQ(drm::contentPathFor(AMDGPU_GEM_DOMAIN_VRAM | AMDGPU_GEM_DOMAIN_GTT,
                                  AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED |
                                      AMDGPU_GEM_CREATE_NO_CPU_ACCESS),
              ContentPath::Sdma);
    // Mesa's VRAM BOs: SDMA on the process's own file (the kernel exports none).
    EXPECT_EQ(drm::contentPathFor(AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_VM_ALWAYS_VALID |
                                                              AMDGPU_GEM_CREATE_NO_CPU_ACCESS),
              ContentPath::FileSdma);
    EXPECT_EQ(drm::contentPathFor(AMDGPU_GEM_DOMAIN_GTT, AMDGPU_GEM_CREATE_VM_ALWAYS_VALID),
              ContentPath::Cpu);
    EXPECT_EQ(drm::contentPathFor(AMDGPU_GEM_DOMAIN_GDS, 0), ContentPath::None);
    EXPECT_EQ(drm::contentPathFor(AMDGPU_GEM_DOMAIN_OA, 0), ContentPath::None);
    EXPECT_STREQ(drm::contentPathName(ContentPath::None), "none");
    EXPECT_STREQ(drm::contentPathName(ContentPath::Cpu), "CPU mmap");
    EXPECT_STREQ(drm::contentPathName(ContentPath::Sdma), "SDMA");
    EXPECT_STREQ(drm::contentPathName(ContentPath::FileSdma), "SDMA on its own file");
}

TEST(DrmPieces, SharesOfOurImageAreItsRecordedOnes) {
    formats::RenderNodeImage image;
    for (auto [handle, sharing] : std::vector<std::pair<uint32_t, formats::BoSharing>>{
             {1, {0, false}}, {2, {0x1234abcd, false}}, {3, {0x1234abcd, true}}}) {
        formats::DrmBoEntry bo;
        bo.handle = handle;
        bo.sharing = sharing;
        image.bos.push_back(bo);
    }
    auto out = drm::sharesOf(image, "x");
    ASSERT_TRUE(out.ok()) << out.error().describe();
    ASSERT_EQ(out.value().size(), 3u);
    EXPECT_EQ(out.value()[0].key, 0u);
    EXPECT_EQ(out.value()[1].key, 0x1234abcdu);
    EXPECT_FALSE(out.value()[1].follower);
    EXPECT_TRUE(out.value()[2].follower);
}

TEST(DrmPieces, SharesOfAnotherWritersImageGoByGemHandle) {
    formats::RenderNodeImage image;
    for (bool isImport : {false, true}) {
        formats::DrmBoEntry bo;
        bo.handle = 5;
        bo.isImport = isImport;
        image.bos.push_back(bo);
    }
    auto foreign = drm::sharesOf(image, "x");
    ASSERT_TRUE(foreign.ok());
    EXPECT_FALSE(foreign.value()[0].follower);
    EXPECT_TRUE(foreign.value()[1].follower);
    EXPECT_EQ(foreign.value()[0].key, drm::kHandleShareKeyTag | 5u);
    EXPECT_EQ(foreign.value()[1].key, foreign.value()[0].key);
}

TEST(DrmPieces, ProcFiles) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    AppFile a = m.open(77, 4, 128);
    AppFile b = m.open(77, 12, 128);
    std::filesystem::create_symlink("/dev/null", m.paths.procRoot + "/77/fd/3");
    std::filesystem::create_symlink("/dev/dri/card0", m.paths.procRoot + "/77/fd/5");
    testsupport::writeFile(m.paths.procRoot + "/77/fd/notanfd", "");
    std::filesystem::create_directories(m.paths.procRoot + "/12/fd");
    std::filesystem::create_directories(m.paths.procRoot + "/4242/fd");
    std::filesystem::remove_all(m.paths.procRoot + "/self");
    std::filesystem::create_symlink("4242", m.paths.procRoot + "/self");
    auto fds = drm::renderFdsOfPid(m.paths, 77);
    ASSERT_EQ(fds.size(), 2u);
    EXPECT_EQ(fds[0].fd, 4);
    EXPECT_EQ(fds[1].fd, 12);
    EXPECT_EQ(fds[0].clientId, std::to_string(m.kernel->fileOf(a.fd)->clientId));
    EXPECT_NE(fds[0].clientId, fds[1].clientId);
    EXPECT_EQ(drm::listPids(m.paths), (std::vector<int>{12, 77}));
    EXPECT_TRUE(drm::renderFdsOfPid(m.paths, 999).empty());
    EXPECT_EQ(drm::drmClientId(m.paths, "77", 99), "");
    testsupport::writeFile(m.paths.procRoot + "/77/fdinfo/4", "drm-client-id:\n");
    EXPECT_EQ(drm::drmClientId(m.paths, "77", 4), "");
    (void)b;
}

TEST(DrmPieces, RenderNodeSysfsWithoutFiles) {
    FakeMachine m;
    auto s = drm::readRenderNodeSysfs(m.kernel->files(), m.paths, 128);
    EXPECT_TRUE(s.driver.empty());
    EXPECT_FALSE(s.vendorId);
    EXPECT_FALSE(s.pci);
    testsupport::writeFile(m.paths.sysRoot + "/class/drm/renderD129/device/vendor", "zz\n");
    EXPECT_FALSE(drm::readRenderNodeSysfs(m.kernel->files(), m.paths, 129).vendorId);
}

class DrmCallsErrors : public ::testing::Test {
protected:
    void SetUp() override {
        m.addGpu(gpuAt(128), "0000:03:00.0");
        f = m.open(1, 3, 128);
        h = m.createBo(f, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    }
    FakeMachine m;
    AppFile f;
    uint32_t h = 0;
    drm::DrmCalls calls{*m.kernel};
};

TEST_F(DrmCallsErrors, EachIoctlFailureNamesTheCall) {
    EXPECT_NE(calls.mappingInfo(f.fd, 99).error().describe().find("GET_MAPPING_INFO"),
              std::string::npos);
    EXPECT_NE(calls.mmapOffset(f.fd, 99).error().describe().find("GEM_MMAP"), std::string::npos);
    EXPECT_NE(calls.gemCreate(f.fd, 0, 0, 4, 0).error().describe().find("GEM_CREATE"),
              std::string::npos);
    EXPECT_NE(calls.gemClose(f.fd, 99).error().describe().find("GEM_CLOSE"), std::string::npos);
    EXPECT_NE(calls.vaMap(f.fd, 99, 0, 0, 4096, 0).error().describe().find("GEM_VA"),
              std::string::npos);
    EXPECT_NE(calls.exportDmabuf(f.fd, 99).error().describe().find("PRIME_HANDLE_TO_FD"),
              std::string::npos);
    EXPECT_NE(calls.importDmabuf(f.fd, 99).error().describe().find("PRIME_FD_TO_HANDLE"),
              std::string::npos);
    uint32_t x = 0;
    EXPECT_NE(calls.info(f.fd, 0x7777, &x, sizeof x).error().describe().find("AMDGPU_INFO"),
              std::string::npos);
    m.kernel->failIoctl(DRM_IOCTL_VERSION, 1, EIO);
    EXPECT_FALSE(calls.driverName(f.fd).ok());
}

TEST_F(DrmCallsErrors, AKernelThatKeepsAskingForMoreIsCutOff) {
    m.kernel->listHandlesInflate = 1;
    auto r = calls.listHandles(f.fd);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("larger array"), std::string::npos);
}

TEST_F(DrmCallsErrors, ListHandlesFailureIsAKernelError) {
    m.kernel->failIoctl(drm::kIoctlGemListHandles, 1, EFAULT);
    auto r = calls.listHandles(f.fd);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), base::ErrorCode::Kernel);
}

TEST_F(DrmCallsErrors, CpuMappingFailureAndBounds) {
    auto bad = drm::CpuMappedBo::map(*m.kernel, f.fd, 0x1234000, 4096, false);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().describe().find("mmap"), std::string::npos);
    uint64_t off = m.mmapOffset(f, h);
    auto ok = drm::CpuMappedBo::map(*m.kernel, f.fd, off, 4096, true);
    ASSERT_TRUE(ok.ok());
    std::vector<std::byte> buf(8192);
    EXPECT_FALSE(ok.value()->read(0, buf).ok());
    EXPECT_FALSE(ok.value()->write(0, buf).ok());
}

TEST(DrmPieces, UsedGpusOnlyDropsOtherGpusAndTheirLinks) {
    FakeMachine m;
    m.addGpu(gpuAt(128), "0000:03:00.0");
    m.addGpu(gpuAt(129), "0000:43:00.0");
    auto topo = drm::readRenderNodeTopology(*m.kernel, m.paths);
    ASSERT_TRUE(topo.ok());
    topology::Topology one = topology::usedGpusOnly(topo.value(), {129});
    ASSERT_EQ(one.gpus().size(), 1u);
    EXPECT_EQ(one.gpus()[0]->renderMinor(), 129);
    EXPECT_EQ(one.nodes[0].ioLinks.size(), 1u);
}

} // namespace
} // namespace fakedrm
