// Incremental dumps in the content lane: each chunk's 128-bit checksum is recorded, and the
// chunks whose checksum the parent's record holds are left out of the file as holes, at the
// offsets they have in the BO, while the image's checksum stays that of every byte.
#include "datapath/content_pipeline.h"
#include "formats/framed_image.h"

#include "content_fakes.h"
#include "sparse_files.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace {

using haltest::MemoryBo;
using testsupport::TempDir;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kSlot = 64 * kKiB;
constexpr uint64_t kChunk = 64 * kKiB;
constexpr uint64_t kSize = 4 * kKiB * kKiB + 5000; // 65 chunks, the last partial
const formats::BoKey kKey{0x1234, 0x7f0000000000, kSize};
const std::set<size_t> kRewritten{3, 17, 40, 41, 64}; // about 8% of the chunks, the last one too

std::vector<std::byte> firstContents() {
    std::vector<std::byte> v = haltest::patternBytes(kSize);
    for (uint64_t i = 0; i < kSize; ++i)
        v[i] |= std::byte{1}; // no zero blocks: what is left out is only what the parent has
    return v;
}

std::vector<std::byte> secondContents() {
    std::vector<std::byte> v = firstContents();
    for (size_t c : kRewritten)
        v[c * kChunk + 7] ^= std::byte{0x80};
    return v;
}

struct Rig {
    TempDir dir;
    content::StagingBuffer staging{4 * kSlot};

    datapath::LaneOptions lane() {
        datapath::LaneOptions o;
        o.gpu = "GPU 0x1234";
        o.staging = staging.span();
        o.slots = 4;
        o.progressSeconds = -1;
        return o;
    }
    /// Dumps `bytes` into `name`, against `parent` when given; the record into `chunks`.
    base::Result<datapath::LaneReport> dump(formats::ImageStore& store, const std::string& name,
                                            std::vector<std::byte> bytes, formats::BoChunks& chunks,
                                            const formats::BoChunks* parent,
                                            uint64_t chunkSize = kChunk) {
        MemoryBo bo{std::move(bytes)};
        chunks = formats::BoChunks{kKey, chunkSize, {}, name};
        std::vector<datapath::DumpImage> images(1);
        images[0].name = name;
        images[0].create = [&store, name] {
            return formats::createFramedImage(store, name, kSize);
        };
        datapath::ContentPiece piece{&bo, nullptr, kSize, "BO 0"};
        piece.chunks = &chunks;
        piece.parent = parent;
        images[0].pieces.push_back(piece);
        HAL_TRY_ASSIGN(datapath::LaneReport r, datapath::runDumpLane(images, lane()));
        if (!images[0].checksum || images[0].checksum->value != content::xxh3Of(bo.bytes))
            return base::makeError(base::ErrorCode::Internal,
                                   "the image's checksum is not that of every byte");
        return r;
    }
};

using ContentIncrement = haltest::SparseDirTest<Rig>;

TEST_F(ContentIncrement, GivenNoParent_WhenDumped_ThenEveryChunkIsHereWithItsChecksum) {
    formats::BoChunks chunks;
    auto r = rig_.dump(*store_, "full.img", firstContents(), chunks, nullptr);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(chunks, formats::sumChunks(kKey, kChunk, firstContents(), "full.img"));
    EXPECT_EQ(r->parentBytes, 0u);
}

TEST_F(ContentIncrement,
       GivenAParentWithMostChunksUnchanged_WhenDumped_ThenOnlyTheRewrittenTakeSpace) {
    formats::BoChunks first, second;
    ASSERT_TRUE(rig_.dump(*store_, "full.img", firstContents(), first, nullptr).ok());
    auto r = rig_.dump(*store_, "incr.img", secondContents(), second, &first);
    ASSERT_TRUE(r.ok()) << r.error().describe();

    uint64_t hereBytes = 0;
    for (size_t i = 0; i < second.chunks.size(); ++i) {
        bool rewritten = kRewritten.count(i) != 0;
        EXPECT_EQ(second.chunks[i].place,
                  rewritten ? formats::ChunkPlace::Here : formats::ChunkPlace::InParent)
            << i;
        if (rewritten)
            hereBytes += std::min(kChunk, kSize - i * kChunk);
    }
    EXPECT_EQ(r->parentBytes, kSize - hereBytes);
    int64_t full = haltest::allocatedBytes(rig_.dir / "full.img");
    int64_t incr = haltest::allocatedBytes(rig_.dir / "incr.img");
    EXPECT_GE(full, static_cast<int64_t>(kSize));
    EXPECT_LE(incr, static_cast<int64_t>(hereBytes + 2 * 4096 * kRewritten.size()))
        << "allocated bytes of the incremental image, of " << full;

    // The chunks here are at their BO offsets, those in the parent read as zeros.
    std::string file = testsupport::readFile(rig_.dir / "incr.img");
    ASSERT_EQ(file.size(), formats::kImageHeaderBytes + kSize);
    std::vector<std::byte> want = secondContents();
    for (size_t i = 0; i < second.chunks.size(); ++i) {
        uint64_t at = i * kChunk, n = std::min(kChunk, kSize - at);
        bool same = true, zero = true;
        for (uint64_t b = at; b < at + n; ++b) {
            auto got = static_cast<std::byte>(file[formats::kImageHeaderBytes + b]);
            same = same && got == want[b];
            zero = zero && got == std::byte{0};
        }
        EXPECT_TRUE(kRewritten.count(i) ? same : zero) << "chunk " << i;
    }
}

TEST_F(ContentIncrement, GivenAParentOfAnotherBoOrChunkSize_WhenDumped_ThenEveryChunkIsHere) {
    formats::BoChunks first, second;
    ASSERT_TRUE(rig_.dump(*store_, "full.img", firstContents(), first, nullptr).ok());
    formats::BoChunks otherVa = first;
    otherVa.key.va += 0x1000;
    auto r = rig_.dump(*store_, "incr.img", firstContents(), second, &otherVa);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->parentBytes, 0u);
    formats::BoChunks halfChunks = formats::sumChunks(kKey, kChunk / 2, firstContents());
    r = rig_.dump(*store_, "incr.img", firstContents(), second, &halfChunks);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->parentBytes, 0u);
}

TEST_F(ContentIncrement,
       GivenSlotsNotAMultipleOfTheChunk_WhenDumped_ThenItIsAnErrorAndNoImageIsLeft) {
    formats::BoChunks chunks;
    auto r = rig_.dump(*store_, "incr.img", firstContents(), chunks, nullptr, 2 * kSlot);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("not aligned to the incremental chunk"), std::string::npos)
        << r.error().describe();
    EXPECT_FALSE(store_->exists("incr.img"));
}

/// The holder of each chunk in a chain of records, newest first: the first that has it here.
std::vector<uint32_t> holders(const std::vector<const formats::BoChunks*>& chain) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < chain[0]->chunks.size(); ++i) {
        uint32_t level = 0;
        while (chain[level]->chunks[i].place == formats::ChunkPlace::InParent)
            ++level;
        out.push_back(level);
    }
    return out;
}

struct ChainOfThree {
    formats::BoChunks first, second, third;
    std::vector<std::byte> last;
    content::ContentChecksum lastSum{content::DigestKind::Xxh3_64, 0};

    base::Result<void> dump(Rig& rig, formats::ImageStore& store) {
        HAL_TRY(rig.dump(store, "d1.img", firstContents(), first, nullptr));
        HAL_TRY(rig.dump(store, "d2.img", secondContents(), second, &first));
        last = secondContents();
        for (size_t c : {0, 17, 30})
            last[c * kChunk + 100] ^= std::byte{0x40};
        HAL_TRY(rig.dump(store, "d3.img", last, third, &second));
        lastSum.value = content::xxh3Of(last);
        return base::success();
    }
    datapath::RestoreImage image(formats::ImageStore& store, content::ContentSink* sink) const {
        datapath::RestoreImage image;
        image.name = "d3.img";
        image.open = [&store] { return formats::openFramedImage(store, "d3.img"); };
        for (const char* parent : {"d2.img", "d1.img"})
            image.parents.push_back(
                [&store, parent] { return formats::openFramedImage(store, parent); });
        image.chainChunk = kChunk;
        image.holder = holders({&third, &second, &first});
        image.pieces.push_back({nullptr, sink, kSize, "BO 0"});
        image.expected = lastSum;
        return image;
    }
};

TEST_F(ContentIncrement,
       GivenAChainOfThree_WhenRestored_ThenEachChunkComesFromItsHolderUnderTheChecksum) {
    ChainOfThree chain;
    ASSERT_TRUE(chain.dump(rig_, *store_).ok());
    std::vector<uint32_t> h = holders({&chain.third, &chain.second, &chain.first});
    EXPECT_EQ(h[0], 0u);
    EXPECT_EQ(h[17], 0u);
    EXPECT_EQ(h[3], 1u);
    EXPECT_EQ(h[5], 2u);
    MemoryBo restored{std::vector<std::byte>(kSize, std::byte{0xee})};
    std::vector<datapath::RestoreImage> images{chain.image(*store_, &restored)};

    auto r = datapath::runRestoreLane(images, rig_.lane());

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(restored.bytes == chain.last);
}

TEST_F(ContentIncrement, GivenAChunkTakenFromTheWrongImage_WhenRestored_ThenTheChecksumRefusesIt) {
    ChainOfThree chain;
    ASSERT_TRUE(chain.dump(rig_, *store_).ok());
    MemoryBo restored{std::vector<std::byte>(kSize, std::byte{0xee})};
    std::vector<datapath::RestoreImage> images{chain.image(*store_, &restored)};
    images[0].holder[17] = 2; // the oldest image holds an older chunk 17

    auto r = datapath::runRestoreLane(images, rig_.lane());

    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("d3.img"), std::string::npos) << r.error().describe();
}

TEST_F(ContentIncrement,
       GivenHoldersThatDoNotCoverTheContents_WhenRestored_ThenItIsRefusedBeforeAnyCopy) {
    ChainOfThree chain;
    ASSERT_TRUE(chain.dump(rig_, *store_).ok());
    MemoryBo restored{std::vector<std::byte>(kSize, std::byte{0xee})};
    std::vector<datapath::RestoreImage> images{chain.image(*store_, &restored)};
    images[0].holder.pop_back();

    auto r = datapath::runRestoreLane(images, rig_.lane());

    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("64 chunk holders"), std::string::npos)
        << r.error().describe();
    EXPECT_TRUE(restored.bytes == std::vector<std::byte>(kSize, std::byte{0xee}))
        << "nothing copied";
}

} // namespace
