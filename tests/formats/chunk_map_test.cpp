// The incremental chunk record: its format round-trips, every malformed field is an error
// naming the file, and a chunk is "in parent" only for the same BO, chunk size and checksum.
#include "formats/chunk_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace {

constexpr uint64_t kChunk = 4096;

std::vector<std::byte> pattern(size_t size, uint8_t seed) {
    std::vector<std::byte> data(size);
    for (size_t i = 0; i < size; ++i)
        data[i] = static_cast<std::byte>((i * 31 + seed) & 0xff);
    return data;
}

formats::ChunkMap parentOf(const formats::BoChunks& bo) {
    formats::ChunkMap map;
    map.bos.push_back(bo);
    return map;
}

TEST(ChunkMap, GivenARecordWhenEncodedAndDecodedThenItIsTheSame) {
    formats::ChunkMap map;
    map.parent = "../dump-1";
    map.parentRecord = {7, 9};
    auto data = pattern(3 * kChunk + 100, 1);
    map.bos.push_back(formats::sumChunks({0x1234, 0x7f0000000000, data.size()}, kChunk, data));
    map.bos[0].chunks[1].place = formats::ChunkPlace::InParent;
    map.bos.push_back(formats::sumChunks({0x5678, 0x1000, 0}, kChunk, {}, "empty.img"));
    auto back = formats::decodeChunkMap(formats::encodeChunkMap(map), "x.img");
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back.value().parent, "../dump-1");
    EXPECT_EQ(back.value().parentRecord, (formats::ChunkSum{7, 9}));
    EXPECT_EQ(back.value().bos, map.bos);
    EXPECT_EQ(back.value().bos[0].chunks.size(), 4u);
    EXPECT_TRUE(back.value().bos[1].chunks.empty());
}

TEST(ChunkMap, GivenTheSameBytesWhenMarkedThenEveryChunkIsInParent) {
    auto data = pattern(4 * kChunk, 2);
    formats::BoKey key{1, 0x2000, data.size()};
    formats::BoChunks now = formats::sumChunks(key, kChunk, data);
    EXPECT_EQ(formats::markInParent(now, parentOf(formats::sumChunks(key, kChunk, data))), 0u);
    for (const auto& c : now.chunks)
        EXPECT_EQ(c.place, formats::ChunkPlace::InParent);
}

TEST(ChunkMap, GivenOneRewrittenChunkWhenMarkedThenOnlyItStaysHere) {
    auto before = pattern(4 * kChunk + 10, 3);
    auto after = before;
    after[2 * kChunk + 5] = std::byte{0xee};
    after[4 * kChunk + 9] = std::byte{0xee};
    formats::BoKey key{1, 0x2000, before.size()};
    formats::BoChunks now = formats::sumChunks(key, kChunk, after);
    EXPECT_EQ(formats::markInParent(now, parentOf(formats::sumChunks(key, kChunk, before))),
              kChunk + 10);
    EXPECT_EQ(now.chunks[0].place, formats::ChunkPlace::InParent);
    EXPECT_EQ(now.chunks[2].place, formats::ChunkPlace::Here);
    EXPECT_EQ(now.chunks[4].place, formats::ChunkPlace::Here);
}

TEST(ChunkMap, GivenAnotherVaGpuOrChunkSizeWhenMarkedThenNothingIsInParent) {
    auto data = pattern(2 * kChunk, 4);
    formats::BoKey key{1, 0x2000, data.size()};
    for (formats::BoChunks old : {formats::sumChunks({1, 0x3000, data.size()}, kChunk, data),
                                  formats::sumChunks({2, 0x2000, data.size()}, kChunk, data),
                                  formats::sumChunks(key, 2 * kChunk, data)}) {
        formats::BoChunks now = formats::sumChunks(key, kChunk, data);
        EXPECT_EQ(formats::markInParent(now, parentOf(old)), data.size());
    }
}

TEST(ChunkMap, GivenTheSameFirstBytesOfALongerBoWhenMarkedThenNothingIsInParent) {
    auto data = pattern(2 * kChunk, 5);
    formats::BoChunks old =
        formats::sumChunks({1, 0x2000, kChunk}, kChunk, std::span(data).first(kChunk));
    formats::BoChunks now = formats::sumChunks({1, 0x2000, data.size()}, kChunk, data);
    EXPECT_EQ(formats::markInParent(now, parentOf(old)), data.size());
}

TEST(ChunkMap, GivenChecksumsWhenTakenThenTheyAre128BitXxh3) {
    auto a = pattern(kChunk, 6);
    auto b = a;
    b[0] ^= std::byte{1};
    formats::ChunkSum sa = formats::chunkSumOf(a), sb = formats::chunkSumOf(b);
    EXPECT_NE(sa, sb);
    EXPECT_NE(sa.low, sb.low);
    EXPECT_NE(sa.high, sb.high);
    // XXH3-128 of nothing, seed 0 (xxHash's own test vector).
    formats::ChunkSum empty = formats::chunkSumOf({});
    EXPECT_EQ(empty.low, 0x6001C324468D497Full);
    EXPECT_EQ(empty.high, 0x99AA06D3014798D8ull);
}

TEST(ChunkMap,
     GivenBytesFedInPiecesAcrossChunkEdges_WhenSummedOnTheWay_ThenEachChunkHasItsOneShotSum) {
    // Three chunks and a short fourth, fed in pieces that start and end inside chunks.
    auto data = pattern(3 * kChunk + 1000, 9);
    for (size_t c = 0; c < 4; ++c) // the pattern repeats every chunk: each made its own
        data[c * kChunk] ^= static_cast<std::byte>(c + 1);
    formats::ChunkSums sums(kChunk);
    for (size_t at = 0, piece = 1; at < data.size(); at += piece, piece = piece * 3 + 7)
        sums.feed(std::span(data).subspan(at, std::min(piece, data.size() - at)));
    const std::vector<formats::ChunkSum>& got = sums.finish();
    ASSERT_EQ(got.size(), 4u);
    for (size_t i = 0; i < got.size(); ++i) {
        size_t length = std::min<size_t>(kChunk, data.size() - i * kChunk);
        EXPECT_EQ(got[i], formats::chunkSumOf(std::span(data).subspan(i * kChunk, length))) << i;
    }
    EXPECT_NE(got[0], got[1]);
}

std::string good() {
    formats::ChunkMap map;
    map.parent = "p";
    auto data = pattern(2 * kChunk, 7);
    map.bos.push_back(formats::sumChunks({1, 0x2000, data.size()}, kChunk, data));
    return formats::encodeChunkMap(map);
}

void expectError(const std::string& bytes, const std::string& fragment) {
    auto r = formats::decodeChunkMap(bytes, "amdgpu-chunks-1.img");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), base::ErrorCode::Image);
    EXPECT_NE(r.error().message().find("amdgpu-chunks-1.img"), std::string::npos)
        << r.error().message();
    EXPECT_NE(r.error().message().find(fragment), std::string::npos) << r.error().message();
}

// Offsets in good(): magic 8, version 4, parent length 4 + "p", parent sum 16, count 4, then the
// entry: gpu 4, flags 4, va 8, size 8, chunk size 8, count 8, chunks of 17.
constexpr size_t kEntry = 8 + 4 + 4 + 1 + 16 + 4;

TEST(ChunkMap, GivenMalformedRecordsWhenDecodedThenEachIsAnErrorNamingTheFileAndField) {
    std::string s = good();
    expectError("AMDGPUCX" + s.substr(8), "AMDGPUCM");
    std::string v = s;
    v[8] = 2;
    expectError(v, "version 2");
    expectError(s.substr(0, s.size() - 1), "a file name of 12 bytes (1 to 255, 11 remain)");
    expectError(s.substr(0, s.size() - 17), "2 chunks do not fit in its 33 remaining bytes");
    std::string slash = s;
    slash[s.size() - 3] = '/';
    expectError(slash, "holds a '/'");
    std::string noName = s.substr(0, s.size() - 16) + std::string(4, '\0');
    expectError(noName, "a file name of 0 bytes");
    expectError(s.substr(0, 20), "ends inside the parent record's checksum");
    expectError(s + "x", "1 bytes after its last entry");
    std::string flags = s;
    flags[kEntry + 4] = 1;
    expectError(flags, "flags 0x1");
    std::string chunk = s;
    chunk[kEntry + 24 + 1] = 0x30; // 4096 -> 0x3000
    expectError(chunk, "not a power of two");
    std::string count = s;
    count[kEntry + 32] = 3;
    expectError(count, "3 chunks, its size needs 2");
    std::string huge = s;
    huge[kEntry + 32 + 6] = 1;
    huge[kEntry + 16 + 7] = 0x10;
    expectError(huge, "do not fit");
    std::string place = s;
    place[kEntry + 40] = 2;
    expectError(place, "chunk place 2");
    std::string entries = s;
    entries[kEntry - 4] = 50;
    expectError(entries, "50 entries do not fit");
    std::string path = s;
    path[12] = static_cast<char>(0xff);
    path[13] = 0x7f;
    expectError(path, "a parent path of");
}

TEST(ChunkMap, GivenAChunkInParentWithoutAParentWhenDecodedThenItIsAnError) {
    formats::ChunkMap map;
    auto data = pattern(kChunk, 8);
    map.bos.push_back(formats::sumChunks({1, 0x2000, data.size()}, kChunk, data));
    map.bos[0].chunks[0].place = formats::ChunkPlace::InParent;
    expectError(formats::encodeChunkMap(map), "names none");
}

TEST(ChunkMap, GivenTwoBosInOneFileWhenDecodedThenItIsAnErrorAndTwoOfOneKeyInTwoFilesAreNot) {
    formats::ChunkMap map;
    auto data = pattern(kChunk, 9);
    map.bos.push_back(formats::sumChunks({1, 0x2000, data.size()}, kChunk, data, "a.img"));
    map.bos.push_back(map.bos[0]);
    expectError(formats::encodeChunkMap(map), "a second BO in a.img");
    map.bos[1].file = "b.img"; // unmapped BOs of one size share a key
    auto back = formats::decodeChunkMap(formats::encodeChunkMap(map), "r.img");
    ASSERT_TRUE(back.ok()) << back.error().message();
    EXPECT_EQ(back.value().findFile("b.img"), &back.value().bos[1]);
    EXPECT_EQ(back.value().find(map.bos[1].key), &back.value().bos[0]) << "the first of its key";
}

} // namespace
