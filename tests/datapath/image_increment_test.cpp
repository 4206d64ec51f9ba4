// Incremental checkpoints as backends use them: the names a delta dump gives its contents, which
// parent record a file is compared against, and how a restore sets up the chain of a BO.
#include "datapath/image_increment.h"

#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testsupport::TempDir;

constexpr uint64_t kChunk = 4096;
const formats::BoKey kA{0x1234, 0x10000, 3 * kChunk};
const formats::BoKey kB{0x1234, 0x20000, kChunk};

std::unique_ptr<formats::ImageStore> storeOf(const std::string& dir) {
    fs::create_directories(dir);
    auto store = formats::openDirectoryStore(dir);
    EXPECT_TRUE(store.ok()) << store.error().message();
    return std::move(store).value();
}

formats::BoChunks chunksOf(const formats::BoKey& key, const std::string& file, uint8_t seed) {
    formats::BoChunks bo{key, kChunk, {}, file};
    for (uint64_t i = 0; i < formats::chunkCount(key.size, kChunk); ++i)
        bo.chunks.push_back({formats::ChunkPlace::Here, {seed + i, 1}});
    return bo;
}

TEST(ImageIncrement, GivenOurNamesAndOthers_WhenMadeDelta_ThenOnlyOursChangeAndOnce) {
    EXPECT_EQ(datapath::deltaImageName("amdgpu-drm-pages-5-128-0000.img"),
              "amdgpu-delta-drm-pages-5-128-0000.img");
    EXPECT_EQ(datapath::deltaImageName("amdgpu-delta-pages-5.img"), "amdgpu-delta-pages-5.img");
    EXPECT_EQ(datapath::deltaImageName("pages-1.img"), "pages-1.img");
}

TEST(ImageIncrement, GivenNoParent_WhenOpened_ThenAFullDumpWithPlainNamesAndNoMatch) {
    TempDir tmp;
    auto store = storeOf(tmp / "d1");
    auto dump = datapath::IncrementalDump::open(*store, "");
    ASSERT_TRUE(dump.ok()) << dump.error().message();
    EXPECT_FALSE(dump->hasParent());
    EXPECT_EQ(dump->contentsName("amdgpu-drm-pages-1-128-0000.img"),
              "amdgpu-drm-pages-1-128-0000.img");
    std::vector<formats::BoKey> keys{kA};
    EXPECT_EQ(dump->match(keys), nullptr);
}

TEST(ImageIncrement, GivenAParentWithoutRecords_WhenOpened_ThenAnErrorNamingItAndTheOption) {
    TempDir tmp;
    fs::create_directories(tmp / "d1");
    auto store = storeOf(tmp / "d2");
    auto dump = datapath::IncrementalDump::open(*store, "../d1");
    ASSERT_FALSE(dump.ok());
    EXPECT_THAT(dump.error().message(),
                HasSubstr("../d1 (option parent-images): holds no chunk record"));
}

TEST(ImageIncrement,
     GivenTwoParentRecords_WhenMatched_ThenTheOneHoldingMostKeysAndTheChildRecordsIt) {
    TempDir tmp;
    auto parent = storeOf(tmp / "d1");
    auto none = datapath::IncrementalDump::open(*parent, "");
    ASSERT_TRUE(none.ok());
    ASSERT_TRUE(none->writeRecord(*parent, 7, {chunksOf(kA, "a.img", 1)}, nullptr).ok());
    ASSERT_TRUE(
        none->writeRecord(*parent, 8, {chunksOf(kA, "a.img", 1), chunksOf(kB, "b.img", 9)}, nullptr)
            .ok());

    auto child = storeOf(tmp / "d2");
    auto dump = datapath::IncrementalDump::open(*child, "../d1");
    ASSERT_TRUE(dump.ok()) << dump.error().message();
    EXPECT_EQ(dump->contentsName("amdgpu-x.img"), "amdgpu-delta-x.img");
    std::vector<formats::BoKey> keys{kA, kB};
    const datapath::ParentRecord* best = dump->match(keys);
    ASSERT_NE(best, nullptr);
    EXPECT_EQ(best->name, "../d1/" + formats::chunkMapImageName(8));
    std::vector<formats::BoKey> onlyA{kA};
    EXPECT_EQ(dump->match(onlyA)->name, "../d1/" + formats::chunkMapImageName(7))
        << "a tie goes to the first name";

    formats::BoChunks a = chunksOf(kA, "amdgpu-delta-a.img", 1);
    a.chunks[1].sum = {99, 99}; // rewritten since the parent
    a.chunks[0].place = a.chunks[2].place = formats::ChunkPlace::InParent;
    ASSERT_TRUE(dump->writeRecord(*child, 3, {a}, best).ok());

    auto chain = datapath::RestoreChain::load(*child, 3);
    ASSERT_TRUE(chain.ok()) << chain.error().message();
    ASSERT_NE(chain.value(), nullptr);
    ASSERT_EQ(chain.value()->levels().size(), 2u);
    datapath::RestoreImage image;
    image.name = "amdgpu-a.img"; // as a full dump names it
    ASSERT_TRUE(chain.value()->attach(image, kA).ok());
    EXPECT_EQ(image.name, "amdgpu-delta-a.img");
    EXPECT_EQ(image.holder, (std::vector<uint32_t>{1, 0, 1}));
    EXPECT_EQ(image.chainChunk, kChunk);
    EXPECT_EQ(image.parents.size(), 1u);
    datapath::RestoreImage missing;
    missing.name = "amdgpu-b.img";
    auto refused = chain.value()->attach(missing, kB);
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.error().message(), HasSubstr("holds no BO of GPU 0x1234 at VA 0x20000"));
}

TEST(ImageIncrement, GivenAFullDumpsRecord_WhenLoadedForRestore_ThenNoChain) {
    TempDir tmp;
    auto store = storeOf(tmp / "d1");
    auto dump = datapath::IncrementalDump::open(*store, "");
    ASSERT_TRUE(dump.ok());
    ASSERT_TRUE(dump->writeRecord(*store, 7, {chunksOf(kA, "a.img", 1)}, nullptr).ok());
    auto chain = datapath::RestoreChain::load(*store, 7);
    ASSERT_TRUE(chain.ok()) << chain.error().message();
    EXPECT_EQ(chain.value(), nullptr);
    auto absent = datapath::RestoreChain::load(*store, 8);
    ASSERT_TRUE(absent.ok());
    EXPECT_EQ(absent.value(), nullptr);
}

} // namespace
