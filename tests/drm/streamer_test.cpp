// Dump and restore through criu's image streamer (the fake of tests/support/image_streamer.h,
// speaking criu's protocol): the images are those a directory dump writes, each is asked for
// once, other plugins' files are left to them, and BOs come back with their contents.
#include "drm_fixture.h"
#include "image_streamer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

using ::testing::Contains;
using ::testing::HasSubstr;
using testsupport::StreamerMode;
using testsupport::StreamerSession;

namespace fakedrm {
namespace {

constexpr int kPid = 100;

/// The two GPUs of these tests.
void addGpus(FakeMachine& m) {
    m.addGpu(gpuAt(128), "0000:03:00.0");
    m.addGpu(gpuAt(129), "0000:43:00.0");
}

/// An exporter and an importer of one GTT BO, each with VRAM of its own.
struct TwoFiles {
    TwoFiles() {
        addGpus(m);
        a = m.open(kPid, 5, 128);
        b = m.open(kPid, 6, 129);
        gtt = m.createBo(a, 96 << 10, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
        vram = m.createBo(b, 160 << 10, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_NO_CPU_ACCESS, 2);
        imported = m.share(a, gtt, b);
        EXPECT_EQ(0, m.mapBo(a, gtt, 0x400000000ull, 0, 96 << 10));
        EXPECT_EQ(0, m.mapBo(b, vram, 0x500000000ull, 0, 160 << 10));
        EXPECT_EQ(0, m.mapBo(b, imported, 0x510000000ull, 0, 96 << 10));
    }
    base::Result<void> dumpInto(formats::ImageStore& store) {
        return dumpRefs(m, store, kPid, {m.criuFile(a, 1), m.criuFile(b, 2)});
    }
    FakeMachine m;
    AppFile a, b;
    uint32_t gtt = 0, vram = 0, imported = 0;
};

/// The images of a dump of `app` through the streamer (capture).
std::map<std::string, std::string> capturedDump(TwoFiles& app, const std::string& sockets) {
    std::filesystem::create_directories(sockets);
    auto images = testsupport::captureDump(
        sockets, [&](formats::ImageStore& store) { return app.dumpInto(store); });
    EXPECT_TRUE(images.ok()) << images.error().describe();
    return images.ok() ? *images : std::map<std::string, std::string>{};
}

TEST(DrmStreamer, ADumpThroughTheStreamerWritesTheImagesOfADirectoryDump) {
    TwoFiles app;
    auto streamed = capturedDump(app, app.m.root / "sockets");
    Images dir;
    ASSERT_TRUE(app.dumpInto(*dir.store).ok());

    auto written = testsupport::readDirectoryFiles(dir.dir.path());
    // A directory dump also leaves a chunk record per render-node file (a later incremental dump
    // compares against them); through the streamer no checkpoint can be a parent, and none is.
    EXPECT_EQ(
        std::erase_if(written, [](const auto& f) { return f.first.starts_with("amdgpu-chunks-"); }),
        2u);
    EXPECT_EQ(streamed, written);
    // Two render-node images, the topology, one BO file each for GTT, VRAM and the import.
    EXPECT_EQ(streamed.size(), 6u);
}

TEST(DrmStreamer, ARestoreThroughTheStreamerReadsOursOnceAndLeavesOtherPluginsFiles) {
    TwoFiles app;
    std::string sockets = app.m.root / "sockets";
    auto images = capturedDump(app, sockets);
    images["cuda-checkpoint-30.img"] = "another plugin's state";

    FakeMachine dst;
    addGpus(dst);
    auto serve = StreamerSession::start(sockets, StreamerMode::Serve, images);
    ASSERT_TRUE(serve.ok());
    drm::DrmDevice dev(dst.env((*serve)->store.get()), dst.kernel, dst.paths);
    auto other = dev.ownsImage(30);
    ASSERT_TRUE(other.ok()) << other.error().describe();
    EXPECT_FALSE(other.value());
    std::vector<int> fds;
    for (uint32_t id : {2u, 1u}) { // the importer first: it waits for its exporter
        ASSERT_TRUE(dev.ownsImage(id).value());
        auto fd = dev.restoreFile(id);
        ASSERT_TRUE(fd.ok()) << fd.error().describe();
        fds.push_back(fd.value());
    }
    ASSERT_TRUE(dev.resumeProcess(kPid).ok());
    std::vector<std::string> asked = (*serve)->streamer->requests();
    auto unread = (*serve)->finish();
    ASSERT_TRUE(unread.ok()) << unread.error().describe();

    expectSameBo(app.m, app.a, dst, fds[1], app.gtt);
    expectSameBo(app.m, app.b, dst, fds[0], app.vram);
    EXPECT_EQ(dst.kernel->fileOf(fds[0])->handles.at(app.imported)->storage,
              dst.kernel->fileOf(fds[1])->handles.at(app.gtt)->storage)
        << "the import is not the exporter's memory";
    EXPECT_THAT(asked, Contains("-amdgpu-renderD-30.img"));
    for (const std::string& name : asked)
        EXPECT_EQ(std::count(asked.begin(), asked.end(), name), 1) << name << " asked twice";
    // Unread: the other plugin's file, and the importer's copy of the shared BO (this backend
    // re-imports it from its exporter; CRIU's plugin would read it).
    EXPECT_EQ(unread->size(), 2u);
    EXPECT_TRUE(unread->count("cuda-checkpoint-30.img"));
}

TEST(DrmStreamer, ABoFileWithAByteTooManyInTheStreamIsRefused) {
    TwoFiles app;
    std::string sockets = app.m.root / "sockets";
    auto images = capturedDump(app, sockets);
    images[formats::drmPagesImageName(1, 128, 0)] += 'x';

    FakeMachine dst;
    addGpus(dst);
    auto serve = StreamerSession::start(sockets, StreamerMode::Serve, images);
    ASSERT_TRUE(serve.ok());
    drm::DrmDevice dev(dst.env((*serve)->store.get()), dst.kernel, dst.paths);
    auto fd = dev.restoreFile(1);
    ASSERT_FALSE(fd.ok());
    EXPECT_THAT(fd.error().describe(), HasSubstr("amdgpu-drm-pages-1-128-0000.img is too long"));
    ASSERT_TRUE((*serve)->finish().ok());
}

} // namespace
} // namespace fakedrm
