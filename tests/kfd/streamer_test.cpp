// Dump and restore through criu's image streamer (the fake of tests/support/image_streamer.h,
// speaking criu's protocol): the images are the ones a directory dump writes, each is asked for
// once, files of other plugins are left to them (-ENOTSUP, never "not found"), and the contents
// come back.
#include "image_streamer.h"
#include "kfd_test_machine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace fakekfd;
using ::testing::Contains;
using ::testing::Not;
using testsupport::StreamerMode;
using testsupport::StreamerSession;

namespace {

constexpr uint32_t kKfdId = 10;
constexpr uint32_t kOtherPluginsId = 30; // a file another plugin dumped

ProcessSpec twoGpuProcess() {
    ProcessSpec spec;
    spec.bos = {{0, (3 << 20) + 5, kVram},
                {0, 8192, kGtt},
                {0, 8192, kDoorbell},
                {1, 96 << 10, kVramPublic},
                {1, 4096, kUserptr}};
    return spec;
}

void dumpInto(TestMachine& m, formats::ImageStore& store, int pid) {
    m.kernel->seize(pid);
    auto dev = m.device(&store);
    ASSERT_TRUE(dev->pauseProcess(pid).value());
    ASSERT_TRUE(dev->checkpointProcess(pid).ok());
    for (uint32_t f = 0; f < 3; ++f) {
        hal::FileRef file = m.fileRef(pid, 3 + static_cast<int>(f), kKfdId + f);
        auto r = dev->dumpFile(file);
        ASSERT_TRUE(r.ok()) << r.error().describe();
        m.kernel->close(file.fd);
    }
    ASSERT_TRUE(dev->finishDump(true).ok());
}

/// The images of a dump of `pid` through the streamer (capture).
std::map<std::string, std::string> capturedDump(TestMachine& m, int pid,
                                                const std::string& sockets) {
    std::filesystem::create_directories(sockets);
    auto images = testsupport::captureDump(sockets, [&](formats::ImageStore& store) {
        dumpInto(m, store, pid);
        return base::success();
    });
    EXPECT_TRUE(images.ok()) << images.error().describe();
    return images.ok() ? *images : std::map<std::string, std::string>{};
}

TEST(KfdStreamer, GivenADumpThroughTheStreamer_ThenItsImagesAreTheOnesADirectoryDumpWrites) {
    TestMachine m(machineSpec(2));
    m.kernel->addProcess(500, twoGpuProcess());
    std::string dir = m.dir / "images";
    std::filesystem::create_directories(dir);
    auto streamed = capturedDump(m, 500, m.dir / "sockets");
    auto store = formats::openDirectoryStore(dir).value();
    dumpInto(m, *store, 500);

    EXPECT_EQ(streamed, testsupport::readDirectoryFiles(dir));
    EXPECT_EQ(streamed.size(), 5u) << "kfd image, 2 pages files, 2 render-node images";
}

TEST(
    KfdStreamer,
    GivenACheckpointWithAnotherPluginsFiles_WhenRestoredThroughTheStreamer_ThenOnlyOursAreReadOnceEach) {
    TestMachine src(machineSpec(2));
    FakeProcess& p = src.kernel->addProcess(500, twoGpuProcess());
    std::string sockets = src.dir / "sockets";
    auto images = capturedDump(src, 500, sockets);
    images["cuda-checkpoint-30.img"] = "another plugin's state";
    images["pages-1.img"] = std::string(8192, 'p'); // criu's own

    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(777);
    auto serve = StreamerSession::start(sockets, StreamerMode::Serve, images);
    ASSERT_TRUE(serve.ok()) << serve.error().describe();
    auto dev = dst.device((*serve)->store.get());
    auto other = dev->ownsImage(kOtherPluginsId);
    ASSERT_TRUE(other.ok()) << other.error().describe();
    EXPECT_FALSE(other.value()) << "another plugin's file was claimed";
    for (uint32_t id = kKfdId; id < kKfdId + 3; ++id) {
        ASSERT_TRUE(dev->ownsImage(id).value()) << id;
        auto fd = dev->restoreFile(id);
        ASSERT_TRUE(fd.ok()) << fd.error().describe();
    }
    ASSERT_TRUE(dev->resumeProcess(777).value());
    ASSERT_TRUE(dev->finishRestore(true).ok());
    std::vector<std::string> asked = (*serve)->streamer->requests();
    auto unread = (*serve)->finish();
    ASSERT_TRUE(unread.ok()) << unread.error().describe();

    EXPECT_EQ(contentsOf(*dst.kernel->process(777)), contentsOf(p));
    EXPECT_EQ(unread->size(), 2u) << "only the other plugin's and criu's files stay unread";
    EXPECT_TRUE(unread->count("cuda-checkpoint-30.img"));
    EXPECT_THAT(asked, Contains("-amdgpu-kfd-30.img"));
    EXPECT_THAT(asked, Contains("-amdgpu-renderD-30.img"));
    EXPECT_THAT(asked, Not(Contains("+cuda-checkpoint-30.img")));
    for (const std::string& name : asked)
        EXPECT_EQ(std::count(asked.begin(), asked.end(), name), 1) << name << " asked twice";
}

TEST(KfdStreamer, GivenAPagesFileCutShortInTheStream_WhenRestored_ThenTruncatedNamingIt) {
    TestMachine src(machineSpec(2));
    src.kernel->addProcess(500, twoGpuProcess());
    std::string sockets = src.dir / "sockets";
    auto images = capturedDump(src, 500, sockets);
    std::string& pages = images["amdgpu-pages-10-1111.img"];
    pages.resize(pages.size() - 100); // no size to compare with: only reading tells

    TestMachine dst(machineSpec(2));
    dst.kernel->setCurrentPid(777);
    auto serve = StreamerSession::start(sockets, StreamerMode::Serve, images);
    ASSERT_TRUE(serve.ok());
    auto dev = dst.device((*serve)->store.get());
    ASSERT_TRUE(dev->ownsImage(kKfdId).value());
    auto fd = dev->restoreFile(kKfdId);
    ASSERT_FALSE(fd.ok());
    EXPECT_THAT(fd.error().describe(),
                ::testing::HasSubstr("amdgpu-pages-10-1111.img is truncated"));
    ASSERT_TRUE(dev->finishRestore(false).ok());
    ASSERT_TRUE((*serve)->finish().ok());
}

// Through the streamer a compressed checkpoint works as over a directory (the packed files are
// written and read in order, once each), but no checkpoint there leaves a chunk record, and an
// incremental dump is refused before the process is paused, naming the option.
TEST(KfdStreamer,
     GivenCompression_WhenDumpedAndRestoredThroughTheStreamer_ThenTheContentsComeBack) {
    TestMachine src(machineSpec(2));
    src.settings.contentCompression = "zstd:1";
    FakeProcess& p = src.kernel->addProcess(500, twoGpuProcess());
    std::string sockets = src.dir / "sockets";
    auto images = capturedDump(src, 500, sockets);
    EXPECT_TRUE(images.count("amdgpu-packed-kfd-bo-10-1000-0000.img"));
    EXPECT_FALSE(images.count("amdgpu-pages-10-1000.img"));
    EXPECT_FALSE(images.count("amdgpu-chunks-10.img"));

    TestMachine dst(machineSpec(2, 0x3000, 150));
    dst.kernel->setCurrentPid(777);
    auto serve = StreamerSession::start(sockets, StreamerMode::Serve, images);
    ASSERT_TRUE(serve.ok()) << serve.error().describe();
    auto dev = dst.device((*serve)->store.get());
    for (uint32_t id = kKfdId; id < kKfdId + 3; ++id) {
        auto fd = dev->restoreFile(id);
        ASSERT_TRUE(fd.ok()) << fd.error().describe();
    }
    ASSERT_TRUE(dev->resumeProcess(777).value());
    std::vector<std::string> asked = (*serve)->streamer->requests();
    ASSERT_TRUE((*serve)->finish().ok());
    EXPECT_EQ(contentsOf(*dst.kernel->process(777)), contentsOf(p));
    for (const std::string& name : asked)
        EXPECT_EQ(std::count(asked.begin(), asked.end(), name), 1) << name << " asked twice";
}

TEST(KfdStreamer,
     GivenParentImages_WhenDumpedThroughTheStreamer_ThenRefusedNamingTheOptionUnpaused) {
    TestMachine m(machineSpec(2));
    m.settings.parentImages = "../ck1";
    FakeProcess& p = m.kernel->addProcess(500, twoGpuProcess());
    std::filesystem::create_directories(m.dir / "sockets");
    auto session = StreamerSession::start(m.dir / "sockets", StreamerMode::Capture);
    ASSERT_TRUE(session.ok()) << session.error().describe();
    m.kernel->seize(500);
    auto dev = m.device((*session)->store.get());
    auto paused = dev->pauseProcess(500);
    ASSERT_FALSE(paused.ok());
    EXPECT_THAT(paused.error().describe(), ::testing::HasSubstr("parent-images ../ck1"));
    EXPECT_THAT(paused.error().describe(), ::testing::HasSubstr("image streamer"));
    EXPECT_FALSE(p.paused);
    (void)(*session)->finish();
}

} // namespace
