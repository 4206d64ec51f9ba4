// Packed files written behind (formats/src/write_behind.h): a frame compressed or sealed into a
// buffer of the writer's is written by a worker while the next is encoded. A write the file
// system refuses on the worker still fails the file, naming it and why, at the next write or at
// close, and leaves no file behind; a file of one frame is written without a worker.
#include "formats/content_keys.h"
#include "formats/packed_image.h"

#include "temp_dir.h"
#include "test_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <random>

namespace {
using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr size_t kFrame = formats::kPackedFrameRaw;

std::vector<std::byte> randomBytes(size_t n) {
    std::mt19937_64 rng(7);
    std::vector<std::byte> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::byte>(rng());
    return v;
}

/// Files this process writes may not grow past `bytes` while it lives (RLIMIT_FSIZE: write()
/// fails with EFBIG there, SIGXFSZ ignored), as a full disk refuses a write.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        getrlimit(RLIMIT_FSIZE, &old_);
        oldHandler_ = signal(SIGXFSZ, SIG_IGN);
        rlimit limit{bytes, old_.rlim_max};
        setrlimit(RLIMIT_FSIZE, &limit);
    }
    ~FileSizeLimit() {
        setrlimit(RLIMIT_FSIZE, &old_);
        signal(SIGXFSZ, oldHandler_);
    }

private:
    rlimit old_{};
    sighandler_t oldHandler_;
};

struct WriteBehind : ::testing::TestWithParam<bool> { // encrypted or compressed
    testsupport::TempDir keysDir, root;
    testsupport::KeyFiles keys = testsupport::writeTestKeys(keysDir.path());
    std::string name = formats::packedImageName("amdgpu-drm-pages-1-128-0000.img");
    std::unique_ptr<formats::ImageStore> store = open();

    std::unique_ptr<formats::ImageStore> open() {
        auto s = formats::openDirectoryStore(root.path()).value();
        if (GetParam())
            s->contentKeys().configure(
                {formats::Cipher::Aes256Gcm, keys.certificate, keys.privateKey});
        return s;
    }
    /// Encrypted frames are sealed into our buffer; compressed ones must shrink to be in it.
    std::vector<std::byte> contents(size_t n) {
        if (GetParam())
            return randomBytes(n);
        std::vector<std::byte> v(n);
        for (size_t i = 0; i < n; ++i)
            v[i] = static_cast<std::byte>((i / 64) % 7);
        return v;
    }
    formats::CodecSpec spec() const {
        return GetParam() ? formats::CodecSpec{} : formats::CodecSpec{formats::Codec::Lz4, 0};
    }
};

TEST_P(WriteBehind,
       GivenAWriteRefusedOnTheWorker_WhenTheLaneWritesOn_ThenTheFileFailsNamingItAndNothingIsLeft) {
    std::vector<std::byte> bytes = contents(16 * kFrame);
    // Each frame in our buffer is at most about a frame: the limit falls inside the third.
    base::Result<void> failed = base::success();
    {
        FileSizeLimit limit(static_cast<rlim_t>(GetParam() ? 2 * kFrame + kFrame / 2 : 1 << 10));
        auto out = formats::createContentsImage(*store, name, bytes.size(), spec());
        ASSERT_TRUE(out.ok()) << out.error().describe();
        for (size_t at = 0; at < bytes.size() && failed.ok(); at += kFrame)
            failed = (*out)->write(std::span(bytes).subspan(at, kFrame));
        if (failed.ok())
            failed = (*out)->close();
    }
    ASSERT_FALSE(failed.ok());
    EXPECT_THAT(failed.error().describe(), HasSubstr(name));
    EXPECT_THAT(failed.error().describe(), HasSubstr("File too large"));
    EXPECT_FALSE(fs::exists(root / name)) << "an image that failed is removed";
}

TEST_P(WriteBehind, GivenManyFramesWrittenBehind_WhenReadBack_ThenEveryByteIsInItsPlace) {
    std::vector<std::byte> bytes = contents(9 * kFrame + 4097);
    {
        auto out = formats::createContentsImage(*store, name, bytes.size(), spec());
        ASSERT_TRUE(out.ok()) << out.error().describe();
        for (size_t at = 0; at < bytes.size(); at += kFrame) // whole frames, then the tail
            ASSERT_TRUE(
                (*out)
                    ->write(std::span(bytes).subspan(at, std::min(kFrame, bytes.size() - at)))
                    .ok());
        ASSERT_TRUE((*out)->close().ok());
    }
    auto reading = open();
    auto in = formats::openContentsImage(*reading, name);
    ASSERT_TRUE(in.ok()) << in.error().describe();
    std::vector<std::byte> back(bytes.size());
    ASSERT_TRUE(in->reader->readExact(back).ok());
    EXPECT_TRUE(back == bytes);
}

INSTANTIATE_TEST_SUITE_P(EncryptedOrCompressed, WriteBehind, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Sealed" : "Compressed"; });

} // namespace
