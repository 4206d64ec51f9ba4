// Dma-buf fds a process holds of its BOs (amdgpu-dmabuf_<id>.img, criu_dmabuf_node): dumped as
// the BO they export, restored as a dma-buf of the recreated BO, in this project's images and in
// CRIU's (gem_handle only).
#include "drm_fixture.h"

#include "formats/dmabuf_image.h"
#include "formats/render_node_image.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using ::testing::HasSubstr;

namespace fakedrm {
namespace {

constexpr int kPid = 100;
constexpr uint32_t kRenderId = 1, kDmabufId = 2;

/// A process with one render node holding a GTT BO, and a dma-buf fd of that BO.
struct Exporter {
    Exporter() {
        src.addGpu(gpuAt(128), "0000:03:00.0");
        app = src.open(kPid, 5, 128);
        bo = src.createBo(app, 64 << 10, AMDGPU_GEM_DOMAIN_GTT, 0, 7);
        EXPECT_EQ(0, src.mapBo(app, bo, 0x400000000ull, 0, 64 << 10));
    }
    base::Result<void> dumpAll() {
        return dumpRefs(src, *images.store, kPid,
                        {src.criuFile(app, kRenderId), src.criuDmabufFile(app, bo, kDmabufId)});
    }
    FakeMachine src;
    AppFile app;
    uint32_t bo = 0;
    Images images;
};

TEST(DrmDmabuf, ADmabufFdComesBackAsADmabufOfTheRestoredBo) {
    Exporter e;
    auto dumped = e.dumpAll();
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    auto image = formats::readDmabufImage(*e.images.store, kDmabufId);
    ASSERT_TRUE(image.ok()) << image.error().describe();
    EXPECT_EQ(image->gemHandle, e.bo);
    EXPECT_EQ(image->renderFileId, kRenderId);

    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, e.images);
    auto render = dev->restoreFile(kRenderId);
    ASSERT_TRUE(render.ok()) << render.error().describe();
    ASSERT_TRUE(dev->ownsImage(kDmabufId).value());
    auto dmabuf = dev->restoreFile(kDmabufId);
    ASSERT_TRUE(dmabuf.ok()) << dmabuf.error().describe();
    struct stat st {};
    ASSERT_EQ(0, dst.kernel->fstat(dmabuf.value(), &st));
    EXPECT_EQ(st.st_ino, dst.kernel->fileOf(render.value())->handles.at(e.bo)->dmabufInode)
        << "the dma-buf is not the restored BO's";
}

TEST(DrmDmabuf, ADmabufOfNoBoBeingDumpedIsNotClaimed) {
    Exporter e;
    AppFile other = e.src.open(kPid + 1, 5, 128);
    uint32_t foreign = e.src.createBo(other, 4096, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    auto dev = makeDevice(e.src, e.images);
    ASSERT_TRUE(dev->pauseProcess(kPid).ok());
    ASSERT_TRUE(dev->checkpointProcess(kPid).ok());
    hal::FileRef f = e.src.criuDmabufFile(other, foreign, 9);
    auto mine = dev->claimFile(f);
    ASSERT_TRUE(mine.ok());
    EXPECT_FALSE(mine.value());
    ASSERT_TRUE(dev->finishDump(true).ok());
}

TEST(DrmDmabuf, ADmabufRestoredBeforeItsRenderNodeSaysWhatMustComeFirst) {
    Exporter e;
    ASSERT_TRUE(e.dumpAll().ok());
    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, e.images);
    auto dmabuf = dev->restoreFile(kDmabufId);
    ASSERT_FALSE(dmabuf.ok());
    EXPECT_THAT(dmabuf.error().describe(),
                HasSubstr("amdgpu-dmabuf_2.img: the BO it exports (GEM handle 1 of render-node "
                          "file id 1) is not restored"));
}

TEST(DrmDmabuf, CriusImagesNameTheBoByItsHandleOnly) {
    Exporter e;
    ASSERT_TRUE(e.dumpAll().ok());
    // As CRIU's development-branch plugin writes them: no sharing fields, gem_handle only.
    auto rn = formats::readRenderNodeImage(*e.images.store, kRenderId);
    ASSERT_TRUE(rn.ok());
    for (formats::DrmBoEntry& bo : rn->bos) {
        bo.checksum.reset();
        bo.sharing.reset();
    }
    ASSERT_TRUE(formats::writeRenderNodeImage(*e.images.store, *rn).ok());
    ASSERT_TRUE(
        formats::writeDmabufImage(*e.images.store, formats::DmabufImage{kDmabufId, e.bo, {}, {}})
            .ok());

    FakeMachine dst;
    dst.addGpu(gpuAt(128), "0000:03:00.0");
    auto dev = makeDevice(dst, e.images);
    auto render = dev->restoreFile(kRenderId);
    ASSERT_TRUE(render.ok()) << render.error().describe();
    auto dmabuf = dev->restoreFile(kDmabufId);
    ASSERT_TRUE(dmabuf.ok()) << dmabuf.error().describe();
    struct stat st {};
    ASSERT_EQ(0, dst.kernel->fstat(dmabuf.value(), &st));
    EXPECT_EQ(st.st_ino, dst.kernel->fileOf(render.value())->handles.at(e.bo)->dmabufInode);
    expectSameBo(e.src, e.app, dst, render.value(), e.bo);
}

TEST(DrmDmabuf, AnImageWithoutGemHandleIsRefused) {
    Exporter e;
    ASSERT_TRUE(e.dumpAll().ok());
    testsupport::writeFile(e.images.dir / formats::dmabufImageName(3), std::string(8, '\0'));
    auto r = formats::readDmabufImage(*e.images.store, 3);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("amdgpu-dmabuf_3.img lacks gem_handle"));
}

} // namespace
} // namespace fakedrm
