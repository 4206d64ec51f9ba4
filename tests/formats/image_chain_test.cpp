// The chain of an incremental checkpoint: which parent a dump compares against (option or
// criu's parent link), and a restore's walk up the chain with its errors naming the file.
#include "formats/image_chain.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using testsupport::TempDir;

constexpr uint64_t kChunk = 4096;
const formats::BoKey kBo{0x1234, 0x7000, 3 * kChunk};
const std::string kRecord = formats::chunkMapImageName(1);

std::unique_ptr<formats::ImageStore> storeOf(const std::string& dir) {
    auto store = formats::openDirectoryStore(dir);
    EXPECT_TRUE(store.ok()) << store.error().message();
    return std::move(store).value();
}

/// Writes a record into `dir` whose chunks are "here" where `here` says, else in `parent`.
formats::ChunkSum writeLevel(const std::string& dir, const std::string& parent,
                             formats::ChunkSum parentSum, std::vector<bool> here) {
    formats::ChunkMap map;
    map.parent = parent;
    map.parentRecord = parentSum;
    formats::BoChunks bo{kBo, kChunk, {}, "amdgpu-drm-pages-1-128-0.img"};
    for (bool h : here)
        bo.chunks.push_back({h ? formats::ChunkPlace::Here : formats::ChunkPlace::InParent, {}});
    map.bos.push_back(bo);
    std::string bytes = formats::encodeChunkMap(map);
    testsupport::writeFile(dir + "/" + kRecord, bytes);
    return formats::chunkSumOf(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

struct Three {
    TempDir tmp;
    Three() {
        auto s1 = writeLevel(tmp / "d1", "", {}, {true, true, true});
        auto s2 = writeLevel(tmp / "d2", "../d1/" + kRecord, s1, {false, true, false});
        writeLevel(tmp / "d3", "../d2/" + kRecord, s2, {false, false, true});
    }
};

TEST(ImageChain, GivenAChainOfThreeWhenLoadedThenEachChunkComesFromTheNewestHolder) {
    Three t;
    auto chain = formats::loadChain(*storeOf(t.tmp / "d3"), kRecord);
    ASSERT_TRUE(chain.ok()) << chain.error().message();
    ASSERT_EQ(chain.value().size(), 3u);
    EXPECT_EQ(formats::levelHolding(chain.value(), kBo, 0).value(), 2u);
    EXPECT_EQ(formats::levelHolding(chain.value(), kBo, 1).value(), 1u);
    EXPECT_EQ(formats::levelHolding(chain.value(), kBo, 2).value(), 0u);
    EXPECT_EQ(formats::bytesPerLevel(chain.value()),
              (std::vector<uint64_t>{kChunk, kChunk, 3 * kChunk}));
}

/// A chain of `depth` checkpoints d1 .. dDEPTH side by side, each against the one before.
void writeChainOf(const TempDir& tmp, size_t depth) {
    formats::ChunkSum sum = writeLevel(tmp / "d1", "", {}, {true, true, true});
    for (size_t i = 2; i <= depth; ++i)
        sum =
            writeLevel(tmp / ("d" + std::to_string(i)),
                       "../d" + std::to_string(i - 1) + "/" + kRecord, sum, {false, false, false});
}

TEST(ImageChain, GivenAChainOf64WhenLoadedThenItLoadsAndOneOf65IsRefusedNamingItsRecord) {
    TempDir tmp;
    writeChainOf(tmp, formats::kMaxChainDepth + 1);
    auto deepest = formats::loadChain(*storeOf(tmp / "d64"), kRecord);
    ASSERT_TRUE(deepest.ok()) << deepest.error().message();
    EXPECT_EQ(deepest->size(), 64u);
    auto tooDeep = formats::loadChain(*storeOf(tmp / "d65"), kRecord);
    ASSERT_FALSE(tooDeep.ok()) << "a chain of " << tooDeep->size() << " loaded";
    EXPECT_EQ(tooDeep.error().message(), kRecord + ": a chain deeper than 64 images");
}

/// Loading the chain from d3 fails with an error naming d2's record and saying `what`.
void expectD2Refused(const Three& t, const std::string& what) {
    auto chain = formats::loadChain(*storeOf(t.tmp / "d3"), kRecord);
    ASSERT_FALSE(chain.ok());
    EXPECT_NE(chain.error().message().find("d2/" + kRecord), std::string::npos)
        << chain.error().message();
    EXPECT_NE(chain.error().message().find(what), std::string::npos) << chain.error().message();
}

TEST(ImageChain, GivenADeletedMiddleImageWhenLoadedThenTheErrorNamesItsRecord) {
    Three t;
    fs::remove_all(t.tmp / "d2");
    expectD2Refused(t, "missing");
}

TEST(ImageChain, GivenAParentRewrittenAfterTheChildWhenLoadedThenItIsAnErrorNamingIt) {
    Three t;
    writeLevel(t.tmp / "d2", "../d1/" + kRecord, {1, 2}, {false, true, false});
    expectD2Refused(t, "changed");
}

TEST(ImageChain, GivenTwoImagesNamingEachOtherWhenLoadedThenItIsRefused) {
    TempDir tmp;
    writeLevel(tmp / "a", "../b/" + kRecord, {}, {true, true, true});
    writeLevel(tmp / "b", "../a/" + kRecord, {}, {true, true, true});
    auto chain = formats::loadChain(*storeOf(tmp / "a"), kRecord);
    ASSERT_FALSE(chain.ok());
    EXPECT_NE(chain.error().message().find("changed"), std::string::npos)
        << chain.error().message();
}

TEST(ImageChain, GivenAChildWhoseParentLacksTheBoWhenWalkedThenItIsAnErrorNamingTheParent) {
    TempDir tmp;
    formats::ChunkMap empty;
    std::string bytes = formats::encodeChunkMap(empty);
    testsupport::writeFile(tmp / ("d1/" + kRecord), bytes);
    writeLevel(tmp / "d2", "../d1/" + kRecord,
               formats::chunkSumOf(std::as_bytes(std::span(bytes.data(), bytes.size()))),
               {false, true, true});
    auto chain = formats::loadChain(*storeOf(tmp / "d2"), kRecord);
    ASSERT_TRUE(chain.ok()) << chain.error().message();
    auto level = formats::levelHolding(chain.value(), kBo, 0);
    ASSERT_FALSE(level.ok());
    EXPECT_NE(level.error().message().find("d1/" + kRecord), std::string::npos)
        << level.error().message();
}

TEST(ImageChain, GivenTheOptionWhenResolvedThenItIsRelativeToTheImageDirectory) {
    TempDir tmp;
    fs::create_directories(tmp / "d1");
    fs::create_directories(tmp / "d2");
    auto dir = formats::parentDirectory(*storeOf(tmp / "d2"), "../d1");
    ASSERT_TRUE(dir.ok()) << dir.error().message();
    EXPECT_EQ(*dir.value(), "../d1");
    auto missing = formats::parentDirectory(*storeOf(tmp / "d2"), "../nope");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message().find("parent-images ../nope"), std::string::npos);
    EXPECT_NE(missing.error().message().find("../nope"), std::string::npos);
}

TEST(ImageChain, GivenCriusParentLinkWhenResolvedThenItIsHonouredAndADanglingOneIsNoParent) {
    TempDir tmp;
    fs::create_directories(tmp / "d1");
    fs::create_directories(tmp / "d2");
    auto none = formats::parentDirectory(*storeOf(tmp / "d2"), "");
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none.value().has_value());
    ASSERT_EQ(symlink("../d1", (tmp / "d2/parent").c_str()), 0);
    auto linked = formats::parentDirectory(*storeOf(tmp / "d2"), "");
    ASSERT_TRUE(linked.ok()) << linked.error().message();
    EXPECT_EQ(*linked.value(), "parent");
    fs::remove_all(tmp / "d1");
    auto dangling = formats::parentDirectory(*storeOf(tmp / "d2"), "");
    ASSERT_TRUE(dangling.ok()) << dangling.error().message();
    EXPECT_FALSE(dangling.value().has_value());
}

} // namespace
