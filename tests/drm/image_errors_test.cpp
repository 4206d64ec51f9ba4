// Restores from truncated, corrupt or inconsistent images fail with a clear error.
#include "drm_fixture.h"

#include "formats/render_node_image.h"
#include "formats/topology_codec.h"

#include <filesystem>
#include <fstream>

namespace fakedrm {
namespace {

constexpr int kPid = 100;

class DrmImageErrors : public ::testing::Test {
protected:
    void SetUp() override {
        src.addGpu(gpuAt(128), "0000:03:00.0");
        dst.addGpu(gpuAt(128), "0000:03:00.0");
        file = src.open(kPid, 5, 128);
        gtt = src.createBo(file, 64 << 10, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
        ASSERT_EQ(0, src.mapBo(file, gtt, 0x100000000ull, 0, 64 << 10));
        auto r = dump(src, images, kPid, {{file, 1}});
        ASSERT_TRUE(r.ok()) << r.error().describe();
    }
    std::string restoreError(uint32_t id = 1) { return restoreErrorOf(dst, images, id); }
    std::string path(const std::string& name) { return images.dir.path() + "/" + name; }
    void rewriteImage(const std::function<void(formats::RenderNodeImage&)>& edit) {
        editRenderNodeImage(images, 1, edit);
    }

    FakeMachine src, dst;
    Images images;
    AppFile file;
    uint32_t gtt = 0;
};

TEST_F(DrmImageErrors, TruncatedPagesFileIsNamed) {
    std::filesystem::resize_file(path(formats::drmPagesImageName(1, 128, 0)), 4096);
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-drm-pages-1-128-0000.img"), std::string::npos) << e;
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
}

TEST_F(DrmImageErrors, CorruptPagesFileFailsItsChecksum) {
    ASSERT_TRUE(testsupport::flipByte(path(formats::drmPagesImageName(1, 128, 0)), 100));
    std::string e = restoreError();
    EXPECT_NE(e.find("checksum"), std::string::npos) << e;
}

TEST_F(DrmImageErrors, MissingPagesFileIsNamed) {
    std::filesystem::remove(path(formats::drmPagesImageName(1, 128, 0)));
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-drm-pages-1-128-0000.img"), std::string::npos) << e;
}

TEST_F(DrmImageErrors, TruncatedRenderNodeImageIsAnImageError) {
    std::filesystem::resize_file(path("amdgpu-renderD-1.img"), 12);
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_FALSE(fd.ok());
    EXPECT_EQ(fd.error().code(), base::ErrorCode::Image);
}

TEST_F(DrmImageErrors, MissingTopologyImageSaysWhichBackendToUse) {
    std::filesystem::remove(path("amdgpu-topology.img"));
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-topology.img"), std::string::npos) << e;
    EXPECT_NE(e.find("kfd backend"), std::string::npos) << e;
}

TEST_F(DrmImageErrors, GpuMissingFromTheTopologyImage) {
    rewriteImage([](formats::RenderNodeImage& i) { i.gpuId = 0xbeef; });
    std::string e = restoreError();
    EXPECT_NE(e.find("0xbeef"), std::string::npos) << e;
}

TEST_F(DrmImageErrors, NoMatchingGpuHereIsANoMappingError) {
    FakeMachine other;
    GpuSpec g = gpuAt(128);
    g.deviceId = 0x1234;
    other.addGpu(g, "0000:03:00.0");
    auto dev = makeDevice(other, images);
    auto fd = dev->restoreFile(1);
    ASSERT_FALSE(fd.ok());
    EXPECT_EQ(fd.error().code(), base::ErrorCode::NoMapping) << fd.error().describe();
}

TEST_F(DrmImageErrors, DuplicateHandles) {
    rewriteImage([](formats::RenderNodeImage& i) {
        i.bos.push_back(i.bos[0]);
        for (formats::DrmBoEntry& bo : i.bos)
            bo.sharing.reset(); // as another writer's image
    });
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-renderD-1.img: BO 1 has GEM handle 1, which BO 0 has already"),
              std::string::npos)
        << e;
    EXPECT_TRUE(dst.kernel->ioctlCounts.empty()) << "no GPU is touched";
}

// Handle tables the kernel cannot reproduce (it hands out the lowest free handle from 1, up to
// INT_MAX) fail before any GPU is touched, naming the image and the handle.
TEST_F(DrmImageErrors, ZeroHandle) {
    rewriteImage([](formats::RenderNodeImage& i) { i.bos[0].handle = 0; });
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-renderD-1.img: BO 0 has GEM handle 0"), std::string::npos) << e;
    EXPECT_TRUE(dst.kernel->ioctlCounts.empty()) << "no GPU is touched";
    EXPECT_EQ(dst.kernel->openFds(), 0u);
}

TEST_F(DrmImageErrors, HandleAboveWhatTheKernelHandsOut) {
    rewriteImage([](formats::RenderNodeImage& i) { i.bos[0].handle = 0x80000000u; });
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-renderD-1.img: BO 0 has GEM handle 2147483648, above the highest"),
              std::string::npos)
        << e;
    EXPECT_TRUE(dst.kernel->ioctlCounts.empty()) << "no GPU is touched";
}

TEST_F(DrmImageErrors, HandleThatWouldTakeTooManyPlaceholders) {
    rewriteImage([](formats::RenderNodeImage& i) { i.bos[0].handle = drm::kMaxHandleGaps + 2; });
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-renderD-1.img: BO 0 has GEM handle 65538, which leaves 65537 "
                     "handles below it unused"),
              std::string::npos)
        << e;
    EXPECT_TRUE(dst.kernel->ioctlCounts.empty()) << "no GPU is touched";
}

// Two handles of one BO in one file (an image that says handle 2 is the memory handle 1 holds)
// cannot be restored: importing memory the file holds gives its handle back.
TEST_F(DrmImageErrors, TwoHandlesOfOneBoInOneFileFailNamingBoth) {
    rewriteImage([](formats::RenderNodeImage& i) {
        ASSERT_TRUE(i.bos[0].sharing.has_value());
        formats::DrmBoEntry second = i.bos[0];
        second.handle = 2;
        second.vms.clear();
        second.sharing = formats::BoSharing{i.bos[0].sharing->key, true, 0};
        i.bos.push_back(second);
    });
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-renderD-1.img: PRIME_FD_TO_HANDLE gave handle 1 for handle 2"),
              std::string::npos)
        << e;
}

TEST_F(DrmImageErrors, AHighHandleIsReachedThroughPlaceholdersThatAreClosedAfterwards) {
    constexpr uint32_t kHigh = 1000;
    rewriteImage([](formats::RenderNodeImage& i) { i.bos[0].handle = kHigh; });
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    const auto& handles = dst.kernel->fileOf(fd.value())->handles;
    ASSERT_EQ(handles.size(), 1u) << "every placeholder is closed";
    EXPECT_EQ(handles.begin()->first, kHigh);
    EXPECT_EQ(dst.kernel->ioctlCounts[DRM_IOCTL_AMDGPU_GEM_CREATE], int{kHigh});
    EXPECT_EQ(dst.kernel->ioctlCounts[DRM_IOCTL_GEM_CLOSE], int{kHigh - 1});
    EXPECT_TRUE(dst.contents(fd.value(), kHigh) == src.contents(file.fd, gtt));
}

TEST_F(DrmImageErrors, ZeroSize) {
    rewriteImage([](formats::RenderNodeImage& i) { i.bos[0].size = 0; });
    EXPECT_NE(restoreError().find("size 0"), std::string::npos);
}

TEST_F(DrmImageErrors, MappingOutsideTheBo) {
    rewriteImage([](formats::RenderNodeImage& i) { i.bos[0].vms[0].size = 1ull << 30; });
    EXPECT_NE(restoreError().find("outside"), std::string::npos);
}

TEST_F(DrmImageErrors, ShareKeyOnSomeBosOnly) {
    rewriteImage([](formats::RenderNodeImage& i) {
        ASSERT_TRUE(i.bos[0].sharing.has_value()) << "this backend records sharing for every BO";
        formats::DrmBoEntry second = i.bos[0];
        second.handle = i.bos[0].handle + 1;
        second.sharing.reset();
        i.bos.push_back(second);
    });
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-renderD-1.img: BO 1 (handle"), std::string::npos) << e;
    EXPECT_NE(e.find("has no share_key although 1 other BOs"), std::string::npos) << e;
}

TEST_F(DrmImageErrors, PrivDataOfAnotherWriterIsRefusedNotIgnored) {
    // An earlier development build kept sharing as text in priv_data; ignoring it would restore
    // shared BOs as separate memory.
    rewriteImage([](formats::RenderNodeImage& i) { i.privData = "amdgpu-drm-shares 1 1\n12 f\n"; });
    std::string e = restoreError();
    EXPECT_NE(e.find("amdgpu-renderD-1.img carries 27 bytes of priv_data"), std::string::npos) << e;
    EXPECT_NE(e.find("would lose which BOs share memory"), std::string::npos) << e;
}

TEST_F(DrmImageErrors, FollowerWithoutShareKey) {
    rewriteImage([](formats::RenderNodeImage& i) {
        i.bos[0].sharing = formats::BoSharing{0, true};
    });
    EXPECT_NE(restoreError().find("is to be imported but has no share key"), std::string::npos);
}

TEST_F(DrmImageErrors, ImportOfAnotherWriterWhoseHandleNoFileExportsFailsAtResume) {
    // CRIU's development-branch plugin names the exporter of an import by the GEM handle.
    rewriteImage([](formats::RenderNodeImage& i) {
        i.bos[0].isImport = true;
        i.bos[0].handle = 77;
        i.bos[0].sharing.reset(); // as CRIU's image
    });
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    auto resumed = dev->resumeProcess(kPid);
    ASSERT_FALSE(resumed.ok());
    EXPECT_NE(resumed.error().describe().find("handle 77"), std::string::npos);
}

TEST_F(DrmImageErrors, ImportWhoseExporterNeverComesFailsAtResume) {
    rewriteImage([](formats::RenderNodeImage& i) {
        i.bos[0].sharing = formats::BoSharing{0xabc, true};
    });
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    auto resumed = dev->resumeProcess(kPid);
    ASSERT_FALSE(resumed.ok());
    EXPECT_NE(resumed.error().describe().find("never found their exporter"), std::string::npos);
}

TEST_F(DrmImageErrors, LegacyImageWithOnlyAGpuIdReopensTheNode) {
    // A v4.2-era image: gpu_id only. The render node is reopened, with nothing in it.
    std::filesystem::remove(path("amdgpu-renderD-1.img"));
    {
        formats::RenderNodeImage legacy;
        legacy.id = 1;
        auto topo = formats::readTopologyImage(*images.store);
        ASSERT_TRUE(topo.ok());
        legacy.gpuId = topo.value().gpus().front()->gpuId;
        ASSERT_TRUE(formats::writeRenderNodeImage(*images.store, legacy).ok());
    }
    auto dev = makeDevice(dst, images);
    auto fd = dev->restoreFile(1);
    ASSERT_TRUE(fd.ok()) << fd.error().describe();
    EXPECT_TRUE(dst.kernel->fileOf(fd.value())->handles.empty());
}

TEST_F(DrmImageErrors, RenderNodeThatCannotBeOpenedIsNamed) {
    FakeMachine other;
    other.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(other, images);
    std::filesystem::remove(other.paths.devRoot + "/dri/renderD128");
    auto fd = dev->restoreFile(1);
    ASSERT_FALSE(fd.ok());
}

} // namespace
} // namespace fakedrm
