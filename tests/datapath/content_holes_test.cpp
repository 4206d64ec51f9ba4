// Zero runs as holes: a content lane dumping into a directory leaves the zero blocks of BO
// contents out of the file, which keeps its length and its bytes; the restore reads them back
// exactly under the same checksum; with holes off, or through the image streamer, every byte is
// written.
#include "datapath/content_pipeline.h"
#include "formats/framed_image.h"

#include "content_fakes.h"
#include "sparse_files.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace {

using haltest::MemoryBo;
using testsupport::TempDir;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kSlot = 64 * kKiB;
constexpr uint64_t kBlock = 4096;
constexpr uint64_t kSize = 3 * kKiB * kKiB + 777;  // ends in a partial block of zeros
constexpr uint64_t kLoneByte = 1280 * kKiB + 5000; // in the lane's 21st chunk, zero but for it

/// BO contents with zeros at the start, in the middle, at the end, and a chunk that is all zero
/// but one byte.
std::vector<std::byte> contents() {
    std::vector<std::byte> v(kSize);
    for (uint64_t i = 100 * kKiB; i < 600 * kKiB; ++i)
        v[i] = haltest::patternByte(i) | std::byte{1};
    v[kLoneByte] = std::byte{0x42};
    for (uint64_t i = 2000 * kKiB; i < 2500 * kKiB + 3; ++i)
        v[i] = haltest::patternByte(i) | std::byte{1};
    return v;
}

/// The image file of `bytes`: its size header, then the bytes.
std::string imageOf(const std::vector<std::byte>& bytes) {
    std::string file(formats::kImageHeaderBytes + bytes.size(), '\0');
    uint64_t announced = bytes.size();
    memcpy(file.data(), &announced, sizeof(announced));
    memcpy(file.data() + formats::kImageHeaderBytes, bytes.data(), bytes.size());
    return file;
}

/// Bytes of the file blocks of `file` that hold a byte other than zero.
uint64_t dataBlockBytes(const std::string& file) {
    std::set<uint64_t> blocks;
    for (uint64_t i = 0; i < file.size(); ++i)
        if (file[i] != '\0')
            blocks.insert(i / kBlock);
    return blocks.size() * kBlock;
}

struct Rig {
    TempDir dir;
    content::StagingBuffer staging{4 * kSlot};
    MemoryBo bo{contents()};

    datapath::LaneOptions lane(bool holes) {
        datapath::LaneOptions o;
        o.gpu = "GPU 0x1234";
        o.staging = staging.span();
        o.slots = 4;
        o.holes = holes;
        o.progressSeconds = -1;
        return o;
    }
    /// Dumps the BO into "bo.img" of `store`.
    base::Result<datapath::DumpImage> dump(formats::ImageStore& store, bool holes,
                                           datapath::LaneReport* report = nullptr) {
        std::vector<datapath::DumpImage> images(1);
        images[0].name = "bo.img";
        images[0].create = [&store] { return formats::createFramedImage(store, "bo.img", kSize); };
        images[0].pieces.push_back({&bo, nullptr, kSize, "BO 0"});
        HAL_TRY_ASSIGN(datapath::LaneReport r, datapath::runDumpLane(images, lane(holes)));
        if (report)
            *report = r;
        return std::move(images[0]);
    }
    std::string path() const { return dir / "bo.img"; }
};

using ContentHoles = haltest::SparseDirTest<Rig>;

TEST_F(ContentHoles, GivenZeroRuns_WhenDumped_ThenTheFileHasTheSameBytesAndOnlyItsDataBlocks) {
    datapath::LaneReport report;
    auto dumped = rig_.dump(*store_, true, &report);
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();

    std::string expected = imageOf(contents());
    std::string file = testsupport::readFile(rig_.path());
    ASSERT_EQ(file.size(), expected.size()) << "the file keeps its length";
    EXPECT_TRUE(file == expected) << "the file reads back byte for byte";
    int64_t allocated = haltest::allocatedBytes(rig_.path());
    uint64_t data = dataBlockBytes(expected);
    EXPECT_LT(data, expected.size() / 2); // what this test is about: mostly zeros
    EXPECT_GE(allocated, static_cast<int64_t>(data));
    EXPECT_LE(allocated, static_cast<int64_t>(data + kBlock))
        << "allocated bytes; the data blocks are " << data << " of " << expected.size();
    EXPECT_GT(report.zeroBytes, kSize / 2);
    ASSERT_TRUE(dumped->checksum.has_value());
    EXPECT_EQ(dumped->checksum->value, content::xxh3Of(contents())) << "the checksum of every byte";
}

TEST_F(ContentHoles, GivenASparseImage_WhenRestored_ThenExactBytesUnderTheSameChecksum) {
    auto dumped = rig_.dump(*store_, true);
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    ASSERT_LT(haltest::allocatedBytes(rig_.path()), static_cast<int64_t>(kSize / 2));
    MemoryBo restored{std::vector<std::byte>(kSize, std::byte{0xee})};
    std::vector<datapath::RestoreImage> images(1);
    images[0].name = "bo.img";
    images[0].open = [this] { return formats::openFramedImage(*store_, "bo.img"); };
    images[0].pieces.push_back({nullptr, &restored, kSize, "BO 0"});
    images[0].expected = dumped->checksum;

    auto r = datapath::runRestoreLane(images, rig_.lane(true));

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(restored.bytes == contents()) << "the zeros are written to the device too";
}

TEST_F(ContentHoles, GivenHolesOff_WhenDumped_ThenEveryBlockIsWritten) {
    auto dumped = rig_.dump(*store_, false);
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    std::string expected = imageOf(contents());
    EXPECT_TRUE(testsupport::readFile(rig_.path()) == expected);
    EXPECT_GE(haltest::allocatedBytes(rig_.path()),
              static_cast<int64_t>(expected.size() / kBlock * kBlock));
    EXPECT_EQ(dumped->checksum->value, content::xxh3Of(contents()));
}

TEST_F(ContentHoles, GivenTheImageStreamer_WhenDumped_ThenTheZerosAreWritten) {
    // The streamer's pipe is a regular file here, so a store that seeked would leave holes.
    std::string path = rig_.dir / "streamed.img";
    auto streamer = formats::makeStreamerStore(
        [&](const std::string&, bool) {
            int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
            return fd < 0 ? -errno : fd;
        },
        formats::StreamDirection::Dump);
    auto dumped = rig_.dump(*streamer, true);
    ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    std::string expected = imageOf(contents());
    EXPECT_TRUE(testsupport::readFile(path) == expected);
    EXPECT_GE(haltest::allocatedBytes(path),
              static_cast<int64_t>(expected.size() / kBlock * kBlock));
}

} // namespace
