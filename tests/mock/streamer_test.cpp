// The mock backend through criu's image streamer (the fake of tests/support/image_streamer.h,
// speaking criu's protocol): a dump writes the images a directory dump writes; a restore reads
// each of ours once, leaves other plugins' files alone and brings the contexts back.
#include "image_streamer.h"
#include "mock_fixture.h"
#include "test_keys.h"

#include "mockgpu/client.h"
#include "mockgpu/machine.h"

#include "formats/image_chain.h"
#include "hal/registry.h"
#include "settings/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

using mocktest::fileRefOf;
using ::testing::Contains;
using testsupport::StreamerMode;
using testsupport::StreamerSession;

namespace {

constexpr uint32_t kFirstId = 40;
constexpr uint64_t kBoSize = 72 * 1024;

class MockStreamerTest : public ::testing::Test {
protected:
    void SetUp() override {
        settings_.mockRoot = machine_.root();
        settings_.maxBufferSize = 16 * 1024; // contents move in several pieces
        registry_.discover(CRIU_AMDGPU_BUILD_BACKEND_DIR, settings_, hal::HostServices{});
        auto chosen = registry_.select(settings_);
        ASSERT_TRUE(chosen.ok()) << chosen.error().describe();
        backend_ = chosen.value()->backend;
        std::filesystem::create_directories(sockets_);
        for (unsigned gpu = 0; gpu < 2; ++gpu) {
            auto fd = mock::openDevice(machine_.root(), gpu);
            ASSERT_TRUE(fd.ok()) << fd.error().describe();
            fds_.push_back(fd.value());
            auto bo = mock::allocBo(fd.value(), kBoSize, 1, 0x100000);
            ASSERT_TRUE(bo.ok());
            ASSERT_TRUE(
                mock::writeBo(fd.value(), bo.value(), 0, mocktest::pattern(kBoSize, gpu + 3)).ok());
            auto state = mock::queryContext(fd.value());
            ASSERT_TRUE(state.ok());
            before_.push_back(state.value());
        }
    }
    void TearDown() override {
        for (int fd : fds_)
            close(fd);
    }

    std::unique_ptr<hal::Device> device(formats::ImageStore* store) {
        auto dev = backend_->createDevice(hal::DeviceEnv{&settings_, store});
        EXPECT_TRUE(dev.ok()) << dev.error().describe();
        return dev.ok() ? std::move(dev).value() : nullptr;
    }

    std::map<std::string, std::string> dumpThroughStreamer() {
        auto session = StreamerSession::start(sockets_, StreamerMode::Capture);
        EXPECT_TRUE(session.ok()) << session.error().describe();
        if (!session.ok())
            return {};
        auto dev = device((*session)->store.get());
        EXPECT_TRUE(dev->pauseProcess(getpid()).value());
        EXPECT_TRUE(dev->checkpointProcess(getpid()).ok());
        for (uint32_t i = 0; i < fds_.size(); ++i) {
            auto r = dev->dumpFile(fileRefOf(fds_[i], kFirstId + i));
            EXPECT_TRUE(r.ok()) << r.error().describe();
        }
        EXPECT_TRUE(dev->finishDump(true).ok());
        auto images = (*session)->finish();
        EXPECT_TRUE(images.ok()) << images.error().describe();
        return images.ok() ? *images : std::map<std::string, std::string>{};
    }

    mocktest::MockMachine machine_{2};
    settings::Settings settings_;
    hal::BackendRegistry registry_;
    hal::Backend* backend_ = nullptr;
    std::string sockets_ = machine_.dir() / "sockets";
    std::vector<int> fds_;
    std::vector<mock::ContextState> before_;
};

TEST_F(MockStreamerTest, ADumpThroughTheStreamerWritesTheImagesOfADirectoryDump) {
    auto streamed = dumpThroughStreamer();
    std::string dir = machine_.dir() / "images";
    std::filesystem::create_directories(dir);
    auto store = formats::openDirectoryStore(dir).value();
    auto dev = device(store.get());
    ASSERT_TRUE(dev->pauseProcess(getpid()).value());
    ASSERT_TRUE(dev->checkpointProcess(getpid()).ok());
    for (uint32_t i = 0; i < fds_.size(); ++i)
        ASSERT_TRUE(dev->dumpFile(fileRefOf(fds_[i], kFirstId + i)).ok());
    ASSERT_TRUE(dev->finishDump(true).ok());

    auto written = testsupport::readDirectoryFiles(dir);
    // A directory dump also leaves the chunk records a later incremental dump compares against;
    // through the streamer no checkpoint can be a parent, and none is written.
    for (uint32_t i = 0; i < fds_.size(); ++i)
        EXPECT_EQ(written.erase(formats::chunkMapImageName(kFirstId + i)), 1u);
    EXPECT_EQ(streamed, written);
    EXPECT_EQ(streamed.size(), 5u) << "2 render-node images, 2 BO files, the topology";
}

TEST_F(MockStreamerTest, ARestoreThroughTheStreamerReadsOursOnceAndLeavesOtherPluginsFiles) {
    auto images = dumpThroughStreamer();
    images["cuda-checkpoint-30.img"] = "another plugin's state";
    for (int fd : fds_)
        close(fd);
    fds_.clear();
    ASSERT_TRUE(mock::resetMachine(machine_.root()).ok());

    auto serve = StreamerSession::start(sockets_, StreamerMode::Serve, images);
    ASSERT_TRUE(serve.ok()) << serve.error().describe();
    auto dev = device((*serve)->store.get());
    auto other = dev->ownsImage(30);
    ASSERT_TRUE(other.ok()) << other.error().describe();
    EXPECT_FALSE(other.value());
    for (uint32_t i = 0; i < 2; ++i) {
        ASSERT_TRUE(dev->ownsImage(kFirstId + i).value());
        auto fd = dev->restoreFile(kFirstId + i);
        ASSERT_TRUE(fd.ok()) << fd.error().describe();
        fds_.push_back(fd.value());
    }
    ASSERT_TRUE(dev->resumeProcess(getpid()).value());
    ASSERT_TRUE(dev->finishRestore(true).ok());
    std::vector<std::string> asked = (*serve)->streamer->requests();
    auto unread = (*serve)->finish();
    ASSERT_TRUE(unread.ok()) << unread.error().describe();

    for (size_t i = 0; i < fds_.size(); ++i) {
        auto after = mock::queryContext(fds_[i]);
        ASSERT_TRUE(after.ok());
        ASSERT_EQ(after->bos.size(), 1u);
        std::vector<std::byte> bytes(kBoSize);
        ASSERT_TRUE(mock::readBo(fds_[i], after->bos[0].handle, 0, bytes).ok());
        EXPECT_EQ(bytes, mocktest::pattern(kBoSize, static_cast<uint8_t>(i + 3)));
    }
    EXPECT_THAT(asked, Contains("-amdgpu-renderD-30.img"));
    for (const std::string& name : asked)
        EXPECT_EQ(std::count(asked.begin(), asked.end(), name), 1) << name << " asked twice";
    EXPECT_EQ(unread->size(), 1u);
    EXPECT_TRUE(unread->count("cuda-checkpoint-30.img"));
}

TEST_F(MockStreamerTest, AnEncryptedDumpStreamsItsKeyImageAndRestoresWithTheKey) {
    testsupport::TempDir keyDir;
    testsupport::KeyFiles keys = testsupport::writeTestKeys(keyDir.path());
    settings_.contentEncryption = "aes-256-gcm";
    settings_.contentCertificate = keys.certificate;
    auto images = dumpThroughStreamer();
    ASSERT_TRUE(images.count("amdgpu-seal.img"));
    std::string clear(reinterpret_cast<const char*>(mocktest::pattern(kBoSize, 3).data()) + 4096,
                      64);
    size_t packed = 0;
    for (const auto& [name, bytes] : images) {
        EXPECT_EQ(bytes.find(clear), std::string::npos)
            << name << " holds BO contents in the clear";
        packed += name.starts_with("amdgpu-packed-drm-pages-");
    }
    EXPECT_EQ(packed, 2u);
    for (int fd : fds_)
        close(fd);
    fds_.clear();
    ASSERT_TRUE(mock::resetMachine(machine_.root()).ok());

    settings_.contentPrivateKey = keys.privateKey;
    auto serve = StreamerSession::start(sockets_, StreamerMode::Serve, images);
    ASSERT_TRUE(serve.ok()) << serve.error().describe();
    auto dev = device((*serve)->store.get());
    for (uint32_t i = 0; i < 2; ++i) {
        auto fd = dev->restoreFile(kFirstId + i);
        ASSERT_TRUE(fd.ok()) << fd.error().describe();
        fds_.push_back(fd.value());
    }
    ASSERT_TRUE(dev->resumeProcess(getpid()).value());
    ASSERT_TRUE(dev->finishRestore(true).ok());
    ASSERT_TRUE((*serve)->finish().ok());
    for (size_t i = 0; i < fds_.size(); ++i) {
        auto after = mock::queryContext(fds_[i]);
        ASSERT_TRUE(after.ok());
        ASSERT_EQ(after->bos.size(), 1u);
        std::vector<std::byte> bytes(kBoSize);
        ASSERT_TRUE(mock::readBo(fds_[i], after->bos[0].handle, 0, bytes).ok());
        EXPECT_EQ(bytes, mocktest::pattern(kBoSize, static_cast<uint8_t>(i + 3)));
    }
}

} // namespace
