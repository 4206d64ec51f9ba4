// PluginSession with criu streaming its images (criu --stream): the plugin finds the streamer
// socket in the image directory and opens images through criu's img_streamer_open(), which
// aborts criu (BUG_ON) on any open mode but criu's own: O_DUMP in a dump, O_RSTR in a restore.
// The fake here checks that, and serves a fake streamer speaking criu's protocol
// (tests/support/image_streamer.h). A dump with the real mock backend goes through it, then a
// restore whose checkpoint also holds another plugin's file, which is left to that plugin.

#include "fake_criu.h"
#include "image_streamer.h"
#include "temp_dir.h"

#include "mockgpu/client.h"
#include "mockgpu/machine.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace {

using fakecriu::fake;
using testsupport::StreamerMode;

/// criu's img_streamer_open() over one connection, with criu's check of the open mode.
struct FakeCriuStreamer {
    std::unique_ptr<testsupport::CriuStreamerClient> client;
    int mode = 0; ///< O_DUMP or O_RSTR, as criu's img_streamer_init() got it
    std::vector<std::string> badModes;
};
FakeCriuStreamer& criuStreamer() {
    static FakeCriuStreamer s;
    return s;
}

constexpr int kDumpMode = O_WRONLY | O_CREAT | O_TRUNC; // criu's O_DUMP
constexpr int kRestoreMode = O_RDONLY;                  // criu's O_RSTR

int fakeImgStreamerOpen(char* filename, int flags) {
    FakeCriuStreamer& s = criuStreamer();
    if (flags != s.mode) { // criu: BUG_ON(flags != img_streamer_mode)
        s.badModes.push_back(std::string(filename) + " opened with " + std::to_string(flags));
        return -1;
    }
    return s.client->open(filename);
}

class StreamerSession : public fakecriu::SessionTest {
protected:
    void SetUp() override {
        SessionTest::SetUp();
        if (geteuid() != 0)
            GTEST_SKIP() << "mock GPU device nodes are made with mknod, which needs root";
        root_ = makeMockMachine();
        openMockGpuWithBo(root_, std::vector<std::byte>(40960, std::byte{0x3c}), &gpuFd_, &bo_);
    }

    void TearDown() override {
        if (gpuFd_ >= 0)
            (void)mock::closeDevice(gpuFd_);
        criuStreamer() = FakeCriuStreamer{};
        SessionTest::TearDown();
    }

    /// The fake streamer in the image directory and criu's connection to it.
    void startStreamer(StreamerMode mode, std::map<std::string, std::string> images = {}) {
        auto streamer = testsupport::FakeImageStreamer::start(imageDir_, mode, std::move(images));
        ASSERT_TRUE(streamer.ok()) << streamer.error().describe();
        streamer_ = std::move(streamer).value();
        auto client = testsupport::CriuStreamerClient::connect(imageDir_, mode);
        ASSERT_TRUE(client.ok()) << client.error().describe();
        criuStreamer().client = std::move(client).value();
        criuStreamer().mode = mode == StreamerMode::Capture ? kDumpMode : kRestoreMode;
    }
    std::map<std::string, std::string> stopStreamer() {
        criuStreamer().client->close();
        auto images = streamer_->finish();
        EXPECT_TRUE(images.ok()) << images.error().describe();
        streamer_.reset();
        return images.ok() ? *images : std::map<std::string, std::string>{};
    }

    frontend::PluginSession::Host streamingHost() const {
        frontend::PluginSession::Host h =
            host({{"CRIU_AMDGPU_MOCK_ROOT", root_},
                  {"CRIU_AMDGPU_BACKEND_DIR", CRIU_AMDGPU_BUILD_BACKEND_DIR}},
                 fakecriu::abi41());
        h.services.imgStreamerOpen = &fakeImgStreamerOpen;
        h.services.commandLine = std::string("criu\0dump\0--stream\0-D\0img\0", 25);
        return h;
    }

    std::string root_;
    int gpuFd_ = -1;
    uint32_t bo_ = 0;
    std::unique_ptr<testsupport::FakeImageStreamer> streamer_;
};

TEST_F(StreamerSession,
       GivenCriuStreaming_WhenDumpedAndRestored_ThenImagesGoThroughTheStreamerInCriusModes) {
    startStreamer(StreamerMode::Capture);
    {
        frontend::PluginSession dump;
        ASSERT_EQ(dump.init(frontend::kStageDump, streamingHost()), 0)
            << fakecriu::logsAtOrAbove(4);
        ASSERT_EQ(dump.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
        ASSERT_EQ(dump.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
        ASSERT_EQ(dump.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
        dump.exit(frontend::kStageDump, 0);
    }
    std::map<std::string, std::string> images = stopStreamer();
    EXPECT_TRUE(criuStreamer().badModes.empty()) << criuStreamer().badModes.front();
    EXPECT_TRUE(images.count("amdgpu-renderD-7.img"));
    EXPECT_TRUE(images.count("amdgpu-topology.img"));
    EXPECT_FALSE(imageExists("amdgpu-renderD-7.img")) << "an image went to the directory";

    ASSERT_TRUE(mock::closeDevice(gpuFd_).ok());
    gpuFd_ = -1;
    ASSERT_TRUE(mock::resetMachine(root_).ok());
    images["cuda-checkpoint-9.img"] = "another plugin's file";
    startStreamer(StreamerMode::Serve, images);
    frontend::PluginSession restore;
    ASSERT_EQ(restore.init(frontend::kStageRestore, streamingHost()), 0)
        << fakecriu::logsAtOrAbove(4);
    EXPECT_EQ(restore.restoreExtFile(9), -ENOTSUP) << fakecriu::logsAtOrAbove(4);
    int fd = restore.restoreExtFile(7);
    ASSERT_GE(fd, 0) << fakecriu::logsAtOrAbove(4);
    gpuFd_ = fd;
    EXPECT_EQ(restore.resumeDevicesLate(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    restore.exit(frontend::kStageRestore, 0);
    std::map<std::string, std::string> unread = stopStreamer();

    EXPECT_TRUE(criuStreamer().badModes.empty()) << criuStreamer().badModes.front();
    EXPECT_EQ(unread.size(), 1u);
    EXPECT_TRUE(unread.count("cuda-checkpoint-9.img"));
    std::vector<std::byte> bytes(40960);
    auto state = mock::queryContext(gpuFd_);
    ASSERT_TRUE(state.ok());
    ASSERT_EQ(state->bos.size(), 1u);
    ASSERT_TRUE(mock::readBo(gpuFd_, state->bos[0].handle, 0, bytes).ok());
    EXPECT_EQ(bytes, std::vector<std::byte>(40960, std::byte{0x3c}));
}

// criu says whether it streams: a checkpoint directory (from a registry) that holds a file
// named like criu's streamer socket does not make the plugin open its images through criu's
// streamer when criu runs without --stream.
TEST_F(StreamerSession,
       GivenAStreamerSocketNameInTheDirectoryWithoutCriuStreaming_ThenImagesGoToTheDirectory) {
    testsupport::writeFile(imageDir_ + "/streamer-capture.sock", "");
    testsupport::writeFile(imageDir_ + "/streamer-serve.sock", "");
    frontend::PluginSession::Host h = streamingHost();
    h.services.commandLine = std::string("criu\0dump\0-D\0img\0--\0--stream\0", 30);
    frontend::PluginSession dump;
    ASSERT_EQ(dump.init(frontend::kStageDump, h), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(dump.pauseDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(dump.checkpointDevices(getpid()), 0) << fakecriu::logsAtOrAbove(4);
    ASSERT_EQ(dump.dumpExtFile(gpuFd_, 7), 0) << fakecriu::logsAtOrAbove(4);
    dump.exit(frontend::kStageDump, 0);
    EXPECT_TRUE(imageExists("amdgpu-renderD-7.img")) << fakecriu::logsAtOrAbove(4);
}

} // namespace
