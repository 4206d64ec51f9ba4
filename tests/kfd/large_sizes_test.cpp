// Sizes past 32 bits in the KFD backend's parallel restore (issue 22 item 5): a job naming BOs of
// 2^31 - 1, 2^31, 2^32, 2^32 + 4096 and 5 GiB goes through the hand-off socket to criu's main
// process and back with every size, the checksum and the fds intact, and their sum (past 2^34)
// is what the pages file's header must announce. Nothing of that size is allocated: the BOs are
// fds of /dev/null, the pages file a sparse file.
#include "hal/bo_contents.h"
#include "kfd/bo_transfer.h"
#include "kfd/contents_lanes.h"
#include "kfd/kfd_images.h"

#include "coordination/handoff_socket.h"
#include "formats/framed_image.h"
#include "formats/image_store.h"

#include "sparse_image.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <numeric>

namespace {

using testing::HasSubstr;

constexpr uint64_t kGiB = 1ull << 30;
const std::vector<uint64_t> kSizes = {(1ull << 31) - 1, 1ull << 31, 1ull << 32, (1ull << 32) + 4096,
                                      5 * kGiB};

/// A transfer of one BO of each size, each BO an fd of /dev/null (closed by the fixture).
class LargeTransfer : public ::testing::Test {
protected:
    void SetUp() override {
        job_.gpuId = 0x1000;
        job_.renderPath = "/dev/dri/renderD128";
        job_.fileId = 5;
        job_.expected =
            content::ContentChecksum{content::DigestKind::Xxh3_64, 0xfedcba9876543210ull};
        for (size_t i = 0; i < kSizes.size(); ++i) {
            int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            ASSERT_GE(fd, 0);
            fds_.push_back(fd);
            job_.bos.push_back({static_cast<uint32_t>(i), kSizes[i], fd, 0x80000001u});
        }
    }
    void TearDown() override {
        for (int fd : fds_)
            close(fd);
    }
    uint64_t total() const { return std::accumulate(kSizes.begin(), kSizes.end(), uint64_t{0}); }

    /// The GPU pages file of `job_`.
    std::string pagesFile() const { return hal::gpuPagesFileName({job_.fileId, job_.gpuId}); }

    kfd::GpuTransfer job_;
    std::vector<int> fds_;
};

TEST_F(LargeTransfer, GivenBosPast32Bits_WhenTheirSizesAreSummed_ThenTheSumIsExact) {
    auto sum = kfd::transferBytes(job_);
    ASSERT_TRUE(sum.ok()) << sum.error().describe();
    EXPECT_EQ(*sum, total());
    EXPECT_GT(*sum, 1ull << 34);
}

/// What criu's main process gets of a job handed over through a socket.
struct Handed {
    kfd::GpuTransfer job;
    uint32_t lanes = 0;
    std::vector<int> fds; ///< received: the caller closes them
};

/// Hands `job` (of `lanes` GPUs) to criu's main process through a socket and decodes it there.
Handed handedOver(const kfd::GpuTransfer& job, uint32_t lanes) {
    Handed out;
    auto channel = coordination::HandoffChannel::create();
    EXPECT_TRUE(channel.ok());
    int sendFd = (*channel)->sendFd();
    auto handoff =
        coordination::makeSocketHandoff([sendFd]() -> base::Result<coordination::SendEnd> {
            return coordination::SendEnd{sendFd, false};
        });
    EXPECT_TRUE(handoff->send(kfd::encodeTransferJob(job, lanes)).ok());
    auto receiver = (*channel)->receiver();
    auto received = receiver->next();
    EXPECT_TRUE(received.ok() && received->has_value()) << "nothing received";
    if (!received.ok() || !received->has_value())
        return out;
    out.fds = (**received).fds;
    out.lanes = (**received).lanes;
    auto decoded = kfd::decodeTransferJob(**received);
    EXPECT_TRUE(decoded.ok()) << decoded.error().describe();
    if (decoded.ok())
        out.job = *decoded;
    return out;
}

TEST_F(LargeTransfer, GivenBosPast32Bits_WhenHandedToCriusMainProcess_ThenEverySizeArrives) {
    Handed handed = handedOver(job_, 2);
    EXPECT_EQ(handed.lanes, 2u);
    const kfd::GpuTransfer& decoded = handed.job;
    ASSERT_EQ(decoded.bos.size(), kSizes.size());
    for (size_t i = 0; i < kSizes.size(); ++i) {
        EXPECT_EQ(decoded.bos[i].size, kSizes[i]) << i;
        EXPECT_EQ(decoded.bos[i].allocFlags, 0x80000001u) << i;
        EXPECT_GE(decoded.bos[i].dmabufFd, 0) << i;
    }
    ASSERT_TRUE(decoded.expected.has_value());
    EXPECT_EQ(decoded.expected->value, 0xfedcba9876543210ull);
    EXPECT_EQ(kfd::transferBytes(decoded).value(), total());
    for (int fd : handed.fds)
        close(fd);
}

// Compressed and incremental checkpoints: each BO in a file of its own, with its VA (its key in
// the chunk record) and its checksum travelling with it.
TEST_F(LargeTransfer,
       GivenBosPast32BitsInFilesOfTheirOwn_WhenHandedOver_ThenVasAndChecksumsArrive) {
    job_.perBo = true;
    job_.fileId = 4000000000u;
    for (size_t i = 0; i < job_.bos.size(); ++i) {
        job_.bos[i].va = (0x7fffull << 32) + (i << 33);
        if (i != 2)
            job_.bos[i].expected =
                content::ContentChecksum{content::DigestKind::Xxh3_64, ~uint64_t{i}};
    }
    Handed handed = handedOver(job_, 1);
    const kfd::GpuTransfer& decoded = handed.job;
    EXPECT_TRUE(decoded.perBo);
    EXPECT_EQ(decoded.fileId, 4000000000u);
    ASSERT_EQ(decoded.bos.size(), kSizes.size());
    for (size_t i = 0; i < kSizes.size(); ++i) {
        EXPECT_EQ(decoded.bos[i].size, kSizes[i]) << i;
        EXPECT_EQ(decoded.bos[i].va, job_.bos[i].va) << i;
        EXPECT_EQ(decoded.bos[i].expected, job_.bos[i].expected) << i;
    }
    for (int fd : handed.fds)
        close(fd);
}

// A flattened checkpoint holds each BO whole in its own file: one of 5 GiB is found with its
// size checked before any GPU is touched, and one cut to 32 bits is refused.
TEST_F(LargeTransfer, GivenAFileOfABoPast32Bits_WhenChecked_ThenItsSizeMustBeWhole) {
    testsupport::TempDir dir;
    std::string name = kfd::kfdBoImageName(5, job_.gpuId, 4); // the 5 GiB BO, index 4
    testsupport::writeSparseImage(dir / name, 5 * kGiB, 5 * kGiB);
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    hal::ContentsLane lane;
    lane.gpu = "GPU 0x1000";
    lane.bos.push_back({{hal::BoFileFamily::KfdBo, 5, job_.gpuId, 4},
                        hal::BoKey{job_.gpuId, 0, 5 * kGiB},
                        5 * kGiB,
                        "BO 4",
                        nullptr,
                        nullptr,
                        std::nullopt});
    auto checked = hal::checkContentsFiles(**store, nullptr, lane);
    EXPECT_TRUE(checked.ok()) << checked.error().describe();
    testsupport::writeSparseImage(dir / name, 5 * kGiB, kGiB);
    checked = hal::checkContentsFiles(**store, nullptr, lane);
    ASSERT_FALSE(checked.ok());
    EXPECT_THAT(checked.error().describe(), HasSubstr(name));
    EXPECT_THAT(checked.error().describe(), HasSubstr(std::to_string(5 * kGiB)));
}

TEST_F(LargeTransfer, GivenAPagesFileOfTheirSum_WhenOpened_ThenItsHeaderAndSizeMatch) {
    testsupport::TempDir dir;
    testsupport::writeSparseImage(dir / pagesFile(), total(), total());
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    auto opened = hal::openGpuPagesFile(**store, pagesFile(), "GPU 0x1000", kSizes.size(), total());
    EXPECT_TRUE(opened.ok()) << opened.error().describe();
}

// A header that kept only the low 32 bits of the sum is refused with both figures whole.
TEST_F(LargeTransfer, GivenAHeaderOfTheSumCutTo32Bits_WhenOpened_ThenTheErrorGivesBothSizes) {
    testsupport::TempDir dir;
    uint64_t cut = total() & 0xffffffffu;
    testsupport::writeSparseImage(dir / pagesFile(), cut, total());
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    auto opened = hal::openGpuPagesFile(**store, pagesFile(), "GPU 0x1000", kSizes.size(), total());
    ASSERT_FALSE(opened.ok());
    EXPECT_THAT(opened.error().describe(), HasSubstr(std::to_string(cut)));
    EXPECT_THAT(opened.error().describe(), HasSubstr(std::to_string(total())));
}

} // namespace
