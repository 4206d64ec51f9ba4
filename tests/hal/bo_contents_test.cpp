// The HAL's recipe of BO contents files (hal/bo_contents.h) chooses their layout: lanes that name
// their GPU pages files go, in a full, uncompressed, plain dump, each into one pages file framed
// with the sum of its BOs' sizes (a GPU without BOs too), and come back from it byte for byte; a
// compressed dump of the same lanes writes a file of ours per BO and no pages file.
#include "mock_device.h"

#include "formats/framed_image.h"
#include "formats/image_store.h"

#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

namespace {

/// A BO's bytes in memory: the source of a dump and the sink of a restore.
class MemoryBo final : public content::ContentSource, public content::ContentSink {
public:
    explicit MemoryBo(std::vector<std::byte> bytes) : bytes_(std::move(bytes)) {}
    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        std::memcpy(out.data(), bytes_.data() + offset, out.size());
        return base::success();
    }
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        std::memcpy(bytes_.data() + offset, in.data(), in.size());
        return base::success();
    }
    std::vector<std::byte> bytes_;
};

std::vector<std::byte> pattern(size_t size, uint8_t seed) {
    std::vector<std::byte> out(size);
    for (size_t i = 0; i < size; ++i)
        out[i] = static_cast<std::byte>((i * 7 + seed) | 1);
    return out;
}

constexpr uint32_t kFileId = 9;

/// GPU 0x1000 with two BOs (`bos`) and GPU 0x2000 with none, in CRIU's KFD layout.
std::vector<hal::ContentsLane> lanesOf(std::vector<MemoryBo>& bos) {
    std::vector<hal::ContentsLane> lanes(2);
    lanes[0].gpu = "GPU 0x1000";
    lanes[0].stagingBytes = 1 << 20;
    lanes[0].pagesFile = hal::GpuPagesFile{kFileId, 0x1000};
    for (uint32_t i = 0; i < bos.size(); ++i)
        lanes[0].bos.push_back({{hal::BoFileFamily::KfdBo, kFileId, 0x1000, i},
                                hal::BoKey{0x1000, 0x10000ull * (i + 1), bos[i].bytes_.size()},
                                bos[i].bytes_.size(),
                                "BO " + std::to_string(i),
                                &bos[i],
                                &bos[i],
                                std::nullopt});
    lanes[1].gpu = "GPU 0x2000";
    lanes[1].stagingBytes = 1 << 20;
    lanes[1].pagesFile = hal::GpuPagesFile{kFileId, 0x2000};
    return lanes;
}

std::vector<std::string> filesIn(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
}

/// A device over an image folder of its own, and the BOs of lanesOf: two of GPU 0x1000.
class BoContents : public ::testing::Test {
protected:
    void SetUp() override {
        auto opened = formats::openDirectoryStore(tmp_.path());
        ASSERT_TRUE(opened.ok()) << opened.error().message();
        store_ = std::move(*opened);
    }
    /// Dumps the lanes of `bos_` with `settings_`; the lanes, with what the HAL filled in.
    std::vector<hal::ContentsLane> dump(hal::ContentsFiles expected) {
        ::testing::NiceMock<haltest::MockDevice> dev(&settings_, store_.get());
        std::vector<hal::ContentsLane> lanes = lanesOf(bos_);
        auto files = dev.saveBoContents(kFileId, lanes);
        EXPECT_TRUE(files.ok()) << files.error().describe();
        EXPECT_TRUE(files.ok() && *files == expected);
        return lanes;
    }

    testsupport::TempDir tmp_;
    std::unique_ptr<formats::ImageStore> store_;
    settings::Settings settings_;
    std::vector<MemoryBo> bos_{MemoryBo(pattern(300 << 10, 1)), MemoryBo(pattern(8192, 2))};
};

TEST_F(BoContents, GivenLanesNamingPagesFilesAndAPlainDump_ThenEachGpuHasOnePagesFileOfItsBos) {
    std::vector<hal::ContentsLane> lanes = dump(hal::ContentsFiles::Criu);
    EXPECT_THAT(filesIn(tmp_.path()),
                ::testing::ElementsAre("amdgpu-pages-9-1000.img", "amdgpu-pages-9-2000.img"));
    EXPECT_EQ(lanes[0].bytes, (300u << 10) + 8192u);
    EXPECT_EQ(lanes[1].bytes, 0u);
    ASSERT_TRUE(lanes[0].checksum && lanes[1].checksum);
    auto empty = formats::openFramedImage(*store_, "amdgpu-pages-9-2000.img");
    ASSERT_TRUE(empty.ok()) << empty.error().describe();
    EXPECT_EQ(empty->announced, 0u);

    std::vector<MemoryBo> restored{MemoryBo(std::vector<std::byte>(300 << 10)),
                                   MemoryBo(std::vector<std::byte>(8192))};
    std::vector<hal::ContentsLane> back = lanesOf(restored);
    for (size_t l = 0; l < back.size(); ++l) {
        back[l].checksum = lanes[l].checksum;
        ASSERT_TRUE(hal::checkContentsFiles(*store_, nullptr, back[l]).ok()) << l;
        auto r = hal::restoreBoContents(*store_, nullptr, back[l]);
        ASSERT_TRUE(r.ok()) << r.error().describe();
    }
    EXPECT_EQ(restored[0].bytes_, bos_[0].bytes_);
    EXPECT_EQ(restored[1].bytes_, bos_[1].bytes_);

    // A pages file that holds another sum than its BOs is refused before any byte moves.
    std::vector<MemoryBo> fewer{MemoryBo(std::vector<std::byte>(300 << 10))};
    std::vector<hal::ContentsLane> wrong = lanesOf(fewer);
    auto refused = hal::checkContentsFiles(*store_, nullptr, wrong[0]);
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.error().describe(),
                ::testing::HasSubstr("amdgpu-pages-9-1000.img does not belong to its image"));
}

TEST_F(BoContents, GivenLanesNamingPagesFilesAndACompressedDump_ThenEachBoHasAFileOfOurs) {
    settings_.contentCompression = "lz4";
    std::vector<hal::ContentsLane> lanes = dump(hal::ContentsFiles::Ours);
    std::vector<std::string> names = filesIn(tmp_.path());
    for (const std::string& name : names)
        EXPECT_EQ(name.find("amdgpu-pages-"), std::string::npos) << name;
    EXPECT_EQ(std::count_if(
                  names.begin(), names.end(),
                  [](const std::string& n) { return n.find("amdgpu-packed-kfd-bo-9-1000-") == 0; }),
              2);
    EXPECT_TRUE(lanes[0].bos[0].checksum && lanes[0].bos[1].checksum);
    EXPECT_FALSE(lanes[0].checksum) << "no pages file, no checksum of one";
}

} // namespace
