// criu-amdgpu image verify on a KFD checkpoint whose BOs are past 32 bits (issue 22 item 5): GPU
// A holds a VRAM BO of 2^32 + 4096 bytes and a GTT BO of 2.5 GiB (6.5 GiB in its pages file),
// GPU B a VRAM BO of 2^31 bytes. The pages files are sparse and the image records no checksum,
// so verify checks the size headers and sizes only and reads no contents: every offset and
// byte range it reports must be the exact 64-bit figure.
#include "image_fixtures.h"
#include "run_tool.h"
#include "sparse_image.h"
#include "temp_dir.h"

#include "formats/framed_image.h"
#include "formats/image_names.h"
#include "kfd/kfd_images.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace {

using json = nlohmann::json;
using testing::HasSubstr;
using namespace imagetest;

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kVramA = (1ull << 32) + 4096, kGttA = 5 * kGiB / 2, kVramB = 1ull << 31;

class ImageVerifyLarge : public ::testing::Test {
protected:
    void SetUp() override {
        std::filesystem::create_directories(images_);
        auto store = formats::openDirectoryStore(images_);
        ASSERT_TRUE(store.ok());
        kfd::KfdImage image;
        image.pid = 4242;
        image.topology = topology::makeSyntheticTopology(twoGpus());
        image.bos = {{0x7f0000000000, kVramA, 0x1000, kGpuA, KFD_IOC_ALLOC_MEM_FLAGS_VRAM},
                     {0x7f1000000000, kGttA, 0x2000, kGpuA, KFD_IOC_ALLOC_MEM_FLAGS_GTT},
                     {0x7f2000000000, kVramB, 0x3000, kGpuB, KFD_IOC_ALLOC_MEM_FLAGS_VRAM}};
        image.numObjects = 3;
        ASSERT_TRUE(kfd::writeKfdImage(**store, formats::kfdImageName(kKfdId), image).ok());
        writePages(pagesA_, kVramA + kGttA, kVramA + kGttA);
        writePages(pagesB_, kVramB, kVramB);
    }
    void writePages(const std::string& name, uint64_t announced, uint64_t contents) {
        testsupport::writeSparseImage(images_ + "/" + name, announced, contents);
    }
    /// The one problem verify reports (as JSON), after checking it exits 2.
    json onlyProblem() {
        tooltest::RunResult r = tooltest::runTool({"image", "verify", "--json", images_});
        EXPECT_EQ(r.exitCode, 2) << r.describe();
        json j = json::parse(r.out);
        EXPECT_EQ(j["problems"].size(), 1u) << r.out;
        return j["problems"].empty() ? json() : j["problems"][0];
    }

    testsupport::TempDir dir_;
    std::string images_ = dir_ / "img";
    std::string pagesA_ = formats::kfdPagesImageName(kKfdId, kGpuA);
    std::string pagesB_ = formats::kfdPagesImageName(kKfdId, kGpuB);
};

TEST_F(ImageVerifyLarge, GivenBosPast32Bits_WhenVerified_ThenTheCheckpointIsSound) {
    tooltest::RunResult r = tooltest::runTool({"image", "verify", images_});
    EXPECT_EQ(r.exitCode, 0) << r.describe();
    EXPECT_THAT(r.out,
                HasSubstr("2 contents file(s) checked (0 with a recorded checksum): all sound"));
}

TEST_F(ImageVerifyLarge,
       GivenAPagesFileCutInsideTheSecondBo_WhenVerified_ThenTheOffsetAndBoAreExact) {
    uint64_t end = kVramA + 1 * kGiB; // inside the GTT BO
    writePages(pagesA_, kVramA + kGttA, end);
    json p = onlyProblem();
    EXPECT_EQ(p["file"], pagesA_);
    EXPECT_EQ(p["offset"].get<int64_t>(), static_cast<int64_t>(formats::kImageHeaderBytes + end));
    std::string first = std::to_string(formats::kImageHeaderBytes + kVramA);
    std::string last = std::to_string(formats::kImageHeaderBytes + kVramA + kGttA - 1);
    EXPECT_THAT(p["what"].get<std::string>(),
                HasSubstr(std::to_string(kGttA - 1 * kGiB) + " bytes short: BO 1"));
    EXPECT_THAT(p["what"].get<std::string>(), HasSubstr("(bytes " + first + ".." + last));
}

TEST_F(ImageVerifyLarge,
       GivenAPagesFile4096BytesTooLong_WhenVerified_ThenItSaysSoAtTheExactOffset) {
    writePages(pagesA_, kVramA + kGttA, kVramA + kGttA + 4096);
    json p = onlyProblem();
    EXPECT_EQ(p["offset"].get<int64_t>(),
              static_cast<int64_t>(formats::kImageHeaderBytes + kVramA + kGttA));
    EXPECT_THAT(p["what"].get<std::string>(), HasSubstr("4096 bytes follow the last BO"));
}

TEST_F(ImageVerifyLarge, GivenASizeHeaderCutTo32Bits_WhenVerified_ThenBothSizesAreWhole) {
    uint64_t total = kVramA + kGttA;
    writePages(pagesA_, total & 0xffffffffu, total);
    json p = onlyProblem();
    EXPECT_EQ(p["offset"], 0);
    EXPECT_THAT(p["what"].get<std::string>(),
                HasSubstr("the size header says " + std::to_string(total & 0xffffffffu) +
                          " bytes, the BOs of amdgpu-kfd-5.img hold " + std::to_string(total)));
}

TEST_F(ImageVerifyLarge, GivenTheBoOf2GiBCutByOneByte_WhenVerified_ThenItIsOneByteShort) {
    writePages(pagesB_, kVramB, kVramB - 1);
    json p = onlyProblem();
    EXPECT_EQ(p["file"], pagesB_);
    EXPECT_EQ(p["offset"].get<int64_t>(),
              static_cast<int64_t>(formats::kImageHeaderBytes + kVramB - 1));
    EXPECT_THAT(p["what"].get<std::string>(), HasSubstr("1 bytes short: BO 2"));
}

} // namespace
