// Content lanes: exact bytes in slot-sized chunks, the stages overlapped, checksums recorded and
// verified, errors naming image, piece and byte range, and progress lines.
#include "datapath/content_pipeline.h"

#include "base/log.h"
#include "content_fakes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace {

using base::ErrorCode;
using haltest::MemoryReader;
using haltest::MemoryWriter;
using haltest::PatternCheckSink;
using haltest::PatternSource;
using ::testing::HasSubstr;

constexpr uint64_t kSlot = 4096;
constexpr uint32_t kSlots = 4;

/// A staging area of exactly `kSlots` slots of kSlot bytes.
struct Staging {
    content::StagingBuffer buffer{kSlot * kSlots};
    datapath::LaneOptions options(bool hash = true) {
        datapath::LaneOptions o;
        o.gpu = "GPU 0x1234";
        o.staging = buffer.span();
        o.slots = kSlots;
        o.hash = hash;
        o.progressSeconds = -1;
        return o;
    }
};

/// Images written into memory, by name.
struct MemoryImages {
    std::map<std::string, MemoryWriter*> writers;
    std::function<base::Result<std::unique_ptr<formats::ImageWriter>>()>
    create(const std::string& name, uint64_t failAfter = 0) {
        return [this, name, failAfter]() -> base::Result<std::unique_ptr<formats::ImageWriter>> {
            auto w = std::make_unique<MemoryWriter>();
            if (failAfter)
                w->failAfter(failAfter);
            writers[name] = w.get();
            kept.push_back(std::move(w));
            return std::unique_ptr<formats::ImageWriter>(new Forward(*kept.back()));
        };
    }
    /// Hands the lane a writer while the test keeps the bytes.
    struct Forward : formats::ImageWriter {
        explicit Forward(MemoryWriter& w) : w_(w) {}
        base::Result<void> write(std::span<const std::byte> d) override { return w_.write(d); }
        base::Result<void> close() override {
            closed = true;
            return w_.close();
        }
        uint64_t written() const override { return w_.written(); }
        MemoryWriter& w_;
        bool closed = false;
    };
    std::vector<std::unique_ptr<MemoryWriter>> kept;
};

datapath::DumpImage dumpImage(const std::string& name, MemoryImages& images,
                              std::vector<std::pair<content::ContentSource*, uint64_t>> pieces) {
    datapath::DumpImage image;
    image.name = name;
    image.create = images.create(name);
    for (auto& [source, size] : pieces)
        image.pieces.push_back(
            {source, nullptr, size, "BO " + std::to_string(image.pieces.size())});
    return image;
}

datapath::RestoreImage restoreImage(const std::string& name, std::vector<std::byte> bytes,
                                    std::vector<std::pair<content::ContentSink*, uint64_t>> pieces,
                                    std::optional<content::ContentChecksum> expected) {
    datapath::RestoreImage image;
    image.name = name;
    auto shared = std::make_shared<std::vector<std::byte>>(std::move(bytes));
    image.open = [shared]() -> base::Result<formats::FramedImage> {
        formats::FramedImage f;
        f.reader = std::make_unique<MemoryReader>(*shared);
        f.contents = static_cast<int64_t>(shared->size());
        return f;
    };
    for (auto& [sink, size] : pieces)
        image.pieces.push_back({nullptr, sink, size, "BO " + std::to_string(image.pieces.size())});
    image.expected = expected;
    return image;
}

uint64_t xxh3(const std::vector<std::byte>& v) {
    return content::xxh3Of(v);
}

class LaneSizes : public ::testing::TestWithParam<uint64_t> {};

TEST_P(LaneSizes, GivenASize_WhenDumped_ThenExactBytesInSlotSizedChunksAndTheirXxh3) {
    const uint64_t size = GetParam();
    Staging staging;
    PatternSource source;
    MemoryImages out;
    std::vector<datapath::DumpImage> images{dumpImage("a.img", out, {{&source, size}})};

    auto r = datapath::runDumpLane(images, staging.options());

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->bytes, size);
    EXPECT_EQ(out.writers.at("a.img")->bytes, haltest::patternBytes(size));
    EXPECT_LE(source.maxChunk(), kSlot);
    EXPECT_EQ(source.calls(), (size + kSlot - 1) / kSlot);
    ASSERT_TRUE(images[0].checksum.has_value());
    EXPECT_EQ(images[0].checksum->kind, content::DigestKind::Xxh3_64);
    EXPECT_EQ(images[0].checksum->value, xxh3(haltest::patternBytes(size)));
}

TEST_P(LaneSizes, GivenAnImage_WhenRestored_ThenExactBytesInSlotSizedChunksAndItsChecksumHolds) {
    const uint64_t size = GetParam();
    Staging staging;
    PatternCheckSink sink;
    auto bytes = haltest::patternBytes(size);
    std::vector<datapath::RestoreImage> images{
        restoreImage("a.img", bytes, {{&sink, size}},
                     content::ContentChecksum{content::DigestKind::Xxh3_64, xxh3(bytes)})};

    auto r = datapath::runRestoreLane(images, staging.options());

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(sink.received(), size);
    EXPECT_EQ(sink.mismatches(), 0u);
    EXPECT_LE(sink.maxChunk(), kSlot);
}

INSTANTIATE_TEST_SUITE_P(AroundTheSlot, LaneSizes,
                         ::testing::Values(0, 1, kSlot - 1, kSlot, kSlot + 1, 10 * kSlot + 7),
                         [](const ::testing::TestParamInfo<uint64_t>& info) {
                             return "Bytes" + std::to_string(info.param);
                         });

/// A source of patternByte(base + i) for a piece that starts at `base` of the pattern.
class OffsetPatternSource : public content::ContentSource {
public:
    explicit OffsetPatternSource(uint64_t base) : base_(base) {}
    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        for (size_t i = 0; i < out.size(); ++i)
            out[i] = haltest::patternByte(base_ + offset + i);
        return base::success();
    }

private:
    uint64_t base_;
};

TEST(ContentLane,
     GivenImagesOfSeveralPiecesAndAnEmptyOne_WhenDumped_ThenEachImageHoldsItsPiecesInOrder) {
    Staging staging;
    OffsetPatternSource p0(0), p1(3 * kSlot + 5), p2(0);
    MemoryImages out;
    std::vector<datapath::DumpImage> images;
    images.push_back(dumpImage("two.img", out, {{&p0, 3 * kSlot + 5}, {&p1, kSlot - 3}}));
    images.push_back(dumpImage("empty.img", out, {}));
    images.push_back(dumpImage("one.img", out, {{&p2, 17}}));

    auto r = datapath::runDumpLane(images, staging.options());

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(out.writers.at("two.img")->bytes, haltest::patternBytes(4 * kSlot + 2));
    EXPECT_TRUE(out.writers.at("empty.img")->bytes.empty()) << "an image without bytes is created";
    EXPECT_EQ(out.writers.at("one.img")->bytes, haltest::patternBytes(17));
    EXPECT_EQ(images[1].checksum->value, xxh3({}));
    for (auto& w : out.kept)
        EXPECT_EQ(w->written(), w->bytes.size());
}

TEST(ContentLane, GivenNoHashing_WhenDumped_ThenTheBytesArriveWithoutAChecksum) {
    Staging staging;
    PatternSource source;
    MemoryImages out;
    std::vector<datapath::DumpImage> images{dumpImage("a.img", out, {{&source, 3 * kSlot}})};

    ASSERT_TRUE(datapath::runDumpLane(images, staging.options(false)).ok());

    EXPECT_EQ(out.writers.at("a.img")->bytes, haltest::patternBytes(3 * kSlot));
    EXPECT_FALSE(images[0].checksum.has_value());
}

TEST(ContentLane,
     GivenTheSourceFailsInTheSecondChunk_WhenDumped_ThenTheErrorNamesImagePieceAndBytes) {
    Staging staging;
    PatternSource source;
    source.failAt(kSlot + 10);
    MemoryImages out;
    std::vector<datapath::DumpImage> images{dumpImage("a.img", out, {{&source, 3 * kSlot}})};

    auto r = datapath::runDumpLane(images, staging.options());

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Kernel);
    EXPECT_EQ(r.error().sysErrno(), EIO);
    EXPECT_THAT(r.error().describe(),
                HasSubstr("while copying bytes 4096..8192 of BO 0 of GPU 0x1234 into a.img"));
    if (out.writers.count("a.img")) { // the writer may not have reached it before the lane stopped
        EXPECT_LE(out.writers.at("a.img")->bytes.size(), kSlot);
    }
}

/// A dump of one image of `chunks` slots whose writer fails with ENOSPC after its first slot.
struct WriterFailsAfterOneSlot {
    explicit WriterFailsAfterOneSlot(uint64_t chunks)
        : images{dumpImage("a.img", out, {{&source, chunks * kSlot}})} {
        images[0].create = out.create("a.img", kSlot);
        result = datapath::runDumpLane(images, staging.options());
    }
    Staging staging;
    PatternSource source;
    MemoryImages out;
    std::vector<datapath::DumpImage> images;
    base::Result<datapath::LaneReport> result = datapath::LaneReport{};
};

TEST(ContentLane, GivenTheWriterFails_WhenDumped_ThenItsErrorPropagatesAndTheImageIsNotClosed) {
    WriterFailsAfterOneSlot dump(8);

    const auto& r = dump.result;
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Io);
    EXPECT_EQ(r.error().sysErrno(), ENOSPC);
    EXPECT_THAT(r.error().describe(), HasSubstr("while writing bytes 4096..8192 of BO 0"));
    EXPECT_LE(dump.source.calls(), 1u + kSlots) << "the copy stops soon after the failure";
}

// The copy stage hashes the last chunk before it hands it over, so it has the checksum when the
// write of that chunk fails: the failed lane must not leave it behind.
TEST(ContentLane, GivenTheWriteOfTheLastChunkFails_WhenDumped_ThenTheImageHasNoChecksum) {
    WriterFailsAfterOneSlot dump(2);

    ASSERT_FALSE(dump.result.ok());
    EXPECT_THAT(dump.result.error().describe(),
                HasSubstr("while writing bytes 4096..8192 of BO 0"));
    EXPECT_FALSE(dump.images[0].checksum.has_value());
}

TEST(ContentLane, GivenTheSinkFailsInTheLastChunk_WhenRestored_ThenTheErrorNamesThatByteRange) {
    Staging staging;
    const uint64_t size = 2 * kSlot + 7;
    PatternCheckSink sink;
    sink.failAt(2 * kSlot + 3);
    std::vector<datapath::RestoreImage> images{
        restoreImage("a.img", haltest::patternBytes(size), {{&sink, size}}, std::nullopt)};

    auto r = datapath::runRestoreLane(images, staging.options());

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().sysErrno(), EFAULT);
    EXPECT_THAT(r.error().describe(),
                HasSubstr("while copying bytes 8192..8199 of BO 0 of GPU 0x1234 from a.img"));
}

TEST(ContentLane, GivenAnImageShorterThanItsPieces_WhenRestored_ThenImageErrorNamingIt) {
    Staging staging;
    PatternCheckSink sink;
    std::vector<datapath::RestoreImage> images{restoreImage(
        "short.img", haltest::patternBytes(kSlot + 1), {{&sink, 2 * kSlot}}, std::nullopt)};

    auto r = datapath::runRestoreLane(images, staging.options());

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("short.img"));
}

TEST(ContentLane, GivenAnImageLongerThanItsPieces_WhenRestored_ThenImageErrorSaysTooLong) {
    Staging staging;
    PatternCheckSink sink;
    std::vector<datapath::RestoreImage> images{
        restoreImage("long.img", haltest::patternBytes(kSlot + 1), {{&sink, kSlot}}, std::nullopt)};

    auto r = datapath::runRestoreLane(images, staging.options());

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("too long"));
}

TEST(ContentLane, GivenAFlippedByte_WhenRestored_ThenTheChecksumNamesTheCorruptImage) {
    Staging staging;
    auto bytes = haltest::patternBytes(5 * kSlot);
    uint64_t sum = xxh3(bytes);
    bytes[3 * kSlot + 1] ^= std::byte{0x40};
    PatternCheckSink sink;
    std::vector<datapath::RestoreImage> images{
        restoreImage("bad.img", bytes, {{&sink, 5 * kSlot}},
                     content::ContentChecksum{content::DigestKind::Xxh3_64, sum})};

    auto r = datapath::runRestoreLane(images, staging.options());

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("bad.img is corrupt: its XXH3-64 checksum is"));
    EXPECT_THAT(r.error().describe(), HasSubstr("GPU 0x1234"));
}

/// A memory reader that says its contents were sealed (formats/content_cipher.h).
class SealedMemoryReader : public MemoryReader {
public:
    using MemoryReader::MemoryReader;
    bool sealed() const override { return true; }
};

// A dump that sealed contents recorded their keyed checksum: metadata without one was changed
// (issue 52), refused before any byte reaches the device, even with hashing off.
TEST(ContentLane,
     GivenSealedContentsWithoutARecordedChecksum_WhenRestored_ThenRefusedNamingTheFile) {
    for (bool hash : {true, false}) {
        Staging staging;
        auto bytes = haltest::patternBytes(2 * kSlot);
        PatternCheckSink sink;
        std::vector<datapath::RestoreImage> images{
            restoreImage("sealed.img", bytes, {{&sink, 2 * kSlot}}, std::nullopt)};
        images[0].open = [bytes]() -> base::Result<formats::FramedImage> {
            formats::FramedImage f;
            f.reader = std::make_unique<SealedMemoryReader>(bytes);
            f.contents = static_cast<int64_t>(bytes.size());
            return f;
        };

        auto r = datapath::runRestoreLane(images, staging.options(hash));

        ASSERT_FALSE(r.ok()) << "hash " << hash;
        EXPECT_EQ(r.error().code(), ErrorCode::Image);
        EXPECT_THAT(r.error().describe(), HasSubstr("sealed.img: encrypted contents"));
        EXPECT_THAT(r.error().describe(), HasSubstr("records no checksum"));
        EXPECT_EQ(sink.received(), 0u) << "nothing reached the device";
    }
}

// Slots of 1 MiB: the I/O stage hashes and moves each slot in several cache-sized blocks.
TEST(ContentLane,
     GivenSlotsLargerThanAHashBlock_WhenDumpedAndRestored_ThenBytesAndChecksumAreThoseOfTheWhole) {
    constexpr uint64_t kBigSlot = 1 << 20;
    constexpr uint64_t kSize = 3 * kBigSlot + 7;
    content::StagingBuffer buffer{4 * kBigSlot};
    Staging small;
    datapath::LaneOptions o = small.options();
    o.staging = buffer.span();
    PatternSource source;
    MemoryImages out;
    std::vector<datapath::DumpImage> dumped{dumpImage("big.img", out, {{&source, kSize}})};
    ASSERT_TRUE(datapath::runDumpLane(dumped, o).ok());
    auto bytes = haltest::patternBytes(kSize);
    EXPECT_EQ(out.writers.at("big.img")->bytes, bytes);
    ASSERT_TRUE(dumped[0].checksum.has_value());
    EXPECT_EQ(dumped[0].checksum->value, xxh3(bytes));

    PatternCheckSink sink;
    std::vector<datapath::RestoreImage> good{
        restoreImage("big.img", bytes, {{&sink, kSize}}, *dumped[0].checksum)};
    auto restored = datapath::runRestoreLane(good, o);
    ASSERT_TRUE(restored.ok()) << restored.error().describe();
    EXPECT_EQ(sink.received(), kSize);
    EXPECT_EQ(sink.mismatches(), 0u);

    bytes[2 * kBigSlot + 300000] ^= std::byte{1}; // in the second block of the third slot
    PatternCheckSink sink2;
    std::vector<datapath::RestoreImage> bad{
        restoreImage("big.img", bytes, {{&sink2, kSize}}, *dumped[0].checksum)};
    auto refused = datapath::runRestoreLane(bad, o);
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.error().describe(),
                HasSubstr("big.img is corrupt: its XXH3-64 checksum is"));
}

/// A reader that serves whole reads of `whole` bytes best (a packed file's frame) and records
/// the size of every read.
class WholeReadsReader : public MemoryReader {
public:
    WholeReadsReader(std::vector<std::byte> data, size_t whole, std::vector<size_t>& sizes)
        : MemoryReader(std::move(data)), whole_(whole), sizes_(sizes) {}
    base::Result<void> readExact(std::span<std::byte> out) override {
        sizes_.push_back(out.size());
        return MemoryReader::readExact(out);
    }
    size_t wholeReadBytes() const override { return whole_; }

private:
    size_t whole_;
    std::vector<size_t>& sizes_;
};

// The restore's I/O stage reads a slot in blocks of the reader's whole reads when they are larger
// than its hash blocks (a packed file's frames, decoded straight into the slot), else in hash
// blocks of 256 KiB; the bytes and the checksum are the same either way.
TEST(ContentLane,
     GivenAReaderOfWholeFrames_WhenRestored_ThenEachSlotIsReadInFramesAndElseInHashBlocks) {
    constexpr uint64_t kFrame = 1 << 20, kBigSlot = 2 * kFrame, kSize = 2 * kBigSlot + kFrame + 7;
    content::StagingBuffer buffer{4 * kBigSlot};
    Staging small;
    datapath::LaneOptions o = small.options();
    o.staging = buffer.span();
    auto bytes = haltest::patternBytes(kSize);
    for (size_t whole : {size_t{0}, size_t{4096}, size_t{kFrame}}) {
        std::vector<size_t> sizes;
        datapath::RestoreImage image = restoreImage("frames.img", {}, {}, std::nullopt);
        image.open = [&]() -> base::Result<formats::FramedImage> {
            formats::FramedImage f;
            f.reader = std::make_unique<WholeReadsReader>(bytes, whole, sizes);
            f.contents = static_cast<int64_t>(kSize);
            return f;
        };
        PatternCheckSink sink;
        image.pieces.push_back({nullptr, &sink, kSize, "BO 0"});
        image.expected = content::ContentChecksum{content::DigestKind::Xxh3_64, xxh3(bytes)};
        std::vector<datapath::RestoreImage> images{std::move(image)};
        auto restored = datapath::runRestoreLane(images, o);
        ASSERT_TRUE(restored.ok()) << restored.error().describe();
        EXPECT_EQ(sink.received(), kSize);
        EXPECT_EQ(sink.mismatches(), 0u);
        size_t block = whole == kFrame ? kFrame : 256 * 1024;
        std::vector<size_t> expected;
        for (uint64_t slot = 0; slot < kSize; slot += kBigSlot)
            for (uint64_t at = slot; at < std::min(kSize, slot + kBigSlot); at += block)
                expected.push_back(
                    std::min<uint64_t>(block, std::min(kSize, slot + kBigSlot) - at));
        expected.push_back(1); // the end: one byte past the contents is asked for, and none found
        EXPECT_EQ(sizes, expected) << "whole reads of " << whole;
    }
}

/// A reader that records each read of a whole slot ("read <image> <slots read so far>").
class SlotReadsReader : public MemoryReader {
public:
    SlotReadsReader(std::vector<std::byte> data, std::string name, std::vector<std::string>& events)
        : MemoryReader(std::move(data)), name_(std::move(name)), events_(events) {}
    base::Result<void> readExact(std::span<std::byte> out) override {
        HAL_TRY(MemoryReader::readExact(out));
        if (out.size() == kSlot)
            events_.push_back("read " + name_ + " " + std::to_string(++slots_));
        return base::success();
    }

private:
    std::string name_;
    std::vector<std::string>& events_;
    int slots_ = 0;
};

// The restore asks for the images after the one it reads to be fetched, so storage has the next
// image's first bytes queued when it reads the current one's last: each once, before it is
// opened, as soon as fewer bytes than the window are left before it, for a window's bytes at
// most; small images several at a time; an image with no readAhead is passed over; a window of 0
// asks for nothing. The first image is asked for before it is opened (an encrypted checkpoint's
// open unwraps its key first).
TEST(ContentLane,
     GivenImagesAfterTheOneBeingRead_WhenRestored_ThenEachIsFetchedOnceAWindowBeforeItIsOpened) {
    // Sizes in slots: a large image, two small ones, a large one, one without readAhead, a last.
    const std::vector<uint64_t> slots{6, 1, 1, 5, 2, 2};
    for (uint64_t window : {3 * kSlot, uint64_t{0}}) {
        std::vector<std::string> events;
        std::vector<PatternCheckSink> sinks(slots.size());
        std::vector<datapath::RestoreImage> images;
        for (size_t i = 0; i < slots.size(); ++i) {
            std::string name = "i" + std::to_string(i);
            datapath::RestoreImage image;
            image.name = name;
            image.open = [&events, name,
                          size = slots[i] * kSlot]() -> base::Result<formats::FramedImage> {
                events.push_back("open " + name);
                formats::FramedImage f;
                f.reader =
                    std::make_unique<SlotReadsReader>(haltest::patternBytes(size), name, events);
                f.contents = static_cast<int64_t>(size);
                return f;
            };
            image.pieces.push_back({nullptr, &sinks[i], slots[i] * kSlot, "BO 0"});
            if (i != 4)
                image.readAhead = [&events, name](uint64_t bytes) {
                    events.push_back("fetch " + name + " " + std::to_string(bytes / kSlot));
                };
            images.push_back(std::move(image));
        }
        Staging staging;
        datapath::LaneOptions o = staging.options(false);
        o.fetchAhead = window;
        auto r = datapath::runRestoreLane(images, o);
        ASSERT_TRUE(r.ok()) << r.error().describe();
        std::vector<std::string> expected;
        if (window)
            expected = {"fetch i0 3", "open i0",    "read i0 1", "read i0 2",  "read i0 3",
                        "read i0 4",  "fetch i1 1", "read i0 5", "fetch i2 1", "read i0 6",
                        "fetch i3 3", "open i1",    "read i1 1", "open i2",    "read i2 1",
                        "open i3",    "read i3 1",  "read i3 2", "read i3 3",  "read i3 4",
                        "read i3 5",  "fetch i5 2", "open i4",   "read i4 1",  "read i4 2",
                        "open i5",    "read i5 1",  "read i5 2"};
        else
            expected = {"open i0",   "read i0 1", "read i0 2", "read i0 3", "read i0 4",
                        "read i0 5", "read i0 6", "open i1",   "read i1 1", "open i2",
                        "read i2 1", "open i3",   "read i3 1", "read i3 2", "read i3 3",
                        "read i3 4", "read i3 5", "open i4",   "read i4 1", "read i4 2",
                        "open i5",   "read i5 1", "read i5 2"};
        EXPECT_EQ(events, expected) << "window " << window;
        for (const PatternCheckSink& sink : sinks)
            EXPECT_EQ(sink.mismatches(), 0u);
    }
}

TEST(ContentLane, GivenAnImageOfAnEarlierVersion_WhenRestored_ThenItsFnvChecksumIsVerified) {
    Staging staging;
    auto bytes = haltest::patternBytes(2 * kSlot + 3);
    content::Fnv1a64 fnv;
    fnv.update(bytes);
    PatternCheckSink good, bad;
    std::vector<datapath::RestoreImage> ok{
        restoreImage("old.img", bytes, {{&good, bytes.size()}},
                     content::ContentChecksum{content::DigestKind::Fnv1a64, fnv.value()})};
    std::vector<datapath::RestoreImage> wrong{
        restoreImage("old.img", bytes, {{&bad, bytes.size()}},
                     content::ContentChecksum{content::DigestKind::Fnv1a64, fnv.value() ^ 1})};

    ASSERT_TRUE(datapath::runRestoreLane(ok, staging.options()).ok());
    auto r = datapath::runRestoreLane(wrong, staging.options());

    EXPECT_EQ(good.mismatches(), 0u);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("its FNV-1a 64 checksum is"));
}

TEST(ContentLane, GivenAStagingAreaTooSmallForItsSlots_WhenRun_ThenAnInternalErrorSaysSo) {
    content::StagingBuffer buffer(4096);
    PatternSource source;
    MemoryImages out;
    std::vector<datapath::DumpImage> images{dumpImage("a.img", out, {{&source, 10}})};
    datapath::LaneOptions o;
    o.gpu = "GPU 0x1";
    o.staging = buffer.span();
    o.slots = 4;

    auto r = datapath::runDumpLane(images, o);

    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("cannot hold 4 page-aligned slots"));
}

/// A source whose every read waits until the writer has been handed the chunk before it: the
/// copy of a chunk overlaps the write of the previous one, or the test would time out.
struct Handshake {
    std::mutex mu;
    std::condition_variable cv;
    uint64_t written = 0; ///< chunks the writer received
    bool overlapped = true;
};

class WaitingSource : public content::ContentSource {
public:
    explicit WaitingSource(Handshake& h) : h_(h) {}
    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        uint64_t chunk = offset / kSlot;
        if (chunk >= 2) {
            std::unique_lock lock(h_.mu);
            // The write of chunk-2 must be able to happen while this copy waits.
            if (!h_.cv.wait_for(lock, std::chrono::seconds(10),
                                [&] { return h_.written + 1 >= chunk; }))
                h_.overlapped = false;
        }
        std::fill(out.begin(), out.end(), std::byte{1});
        return base::success();
    }

private:
    Handshake& h_;
};

class CountingHandshakeWriter : public formats::ImageWriter {
public:
    explicit CountingHandshakeWriter(Handshake& h) : h_(h) {}
    base::Result<void> write(std::span<const std::byte> d) override {
        {
            std::lock_guard lock(h_.mu);
            ++h_.written;
        }
        h_.cv.notify_all();
        n_ += d.size();
        return base::success();
    }
    base::Result<void> close() override { return base::success(); }
    uint64_t written() const override { return n_; }

private:
    Handshake& h_;
    uint64_t n_ = 0;
};

TEST(ContentLane, GivenACopyThatWaitsForTheWriter_WhenDumped_ThenTheStagesOverlap) {
    Staging staging;
    Handshake h;
    WaitingSource source(h);
    datapath::DumpImage image;
    image.name = "overlap.img";
    image.create = [&]() -> base::Result<std::unique_ptr<formats::ImageWriter>> {
        return std::unique_ptr<formats::ImageWriter>(new CountingHandshakeWriter(h));
    };
    image.pieces.push_back({&source, nullptr, 12 * kSlot, "BO 0"});
    std::vector<datapath::DumpImage> images{std::move(image)};

    auto r = datapath::runDumpLane(images, staging.options());

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(h.overlapped) << "a copy waited for a write that could only come after it";
    EXPECT_EQ(h.written, 12u);
}

/// Lines the HAL logs, captured.
std::vector<std::string>& captured() {
    static std::vector<std::string> lines;
    return lines;
}

TEST(ContentLane, GivenAProgressInterval_WhenDumped_ThenProgressLinesAndASummaryAreLoggedAtInfo) {
    captured().clear();
    base::setLogSink([](base::LogLevel level, const char* line) {
        if (level == base::LogLevel::Info)
            captured().push_back(line);
    });
    base::setLogThreshold(base::LogLevel::Debug);
    Staging staging;
    PatternSource source;
    MemoryImages out;
    std::vector<datapath::DumpImage> images{dumpImage("a.img", out, {{&source, 6 * kSlot}})};
    datapath::LaneOptions o = staging.options();
    o.progressSeconds = 0;

    auto r = datapath::runDumpLane(images, o);
    base::setLogSink(nullptr);
    base::setLogThreshold(base::LogLevel::Warn);

    ASSERT_TRUE(r.ok());
    ASSERT_GE(captured().size(), 2u);
    EXPECT_THAT(
        captured().front(),
        ::testing::MatchesRegex(".*GPU 0x1234: dumping BO contents: 0 of 0 MiB \\([0-9]+%\\), "
                                "[0-9.]+ MiB/s"));
    EXPECT_THAT(captured().back(), ::testing::MatchesRegex(
                                       ".*GPU 0x1234: BO contents dumped: 24576 bytes in [0-9.]+ s "
                                       "\\([0-9.]+ MiB/s\\)"));
}

TEST(ContentLane, GivenLazyEnds_WhenAPieceIsMoved_ThenEachIsMadeOnceAndDroppedAfterItsLastByte) {
    Staging staging;
    int made = 0, alive = 0;
    struct Counted : PatternSource {
        explicit Counted(int& alive) : alive_(alive) { ++alive_; }
        ~Counted() override { --alive_; }
        int& alive_;
    };
    std::vector<std::unique_ptr<datapath::LazySource>> sources;
    MemoryImages out;
    std::vector<datapath::DumpImage> images;
    int maxAlive = 0;
    for (int i = 0; i < 3; ++i) {
        sources.push_back(std::make_unique<datapath::LazySource>(
            2 * kSlot, [&]() -> base::Result<std::unique_ptr<content::ContentSource>> {
                ++made;
                auto s = std::make_unique<Counted>(alive);
                maxAlive = std::max(maxAlive, alive);
                return std::unique_ptr<content::ContentSource>(std::move(s));
            }));
        images.push_back(
            dumpImage("i" + std::to_string(i), out, {{sources.back().get(), 2 * kSlot}}));
    }

    ASSERT_TRUE(datapath::runDumpLane(images, staging.options()).ok());

    EXPECT_EQ(made, 3);
    EXPECT_EQ(alive, 0);
    EXPECT_EQ(maxAlive, 1);
}

TEST(ContentLane, GivenThroughput_WhenDescribed_ThenBytesSecondsAndMiBPerSecond) {
    EXPECT_EQ(datapath::describeThroughput(1 << 20, 0.5), "1048576 bytes in 0.500 s (2.0 MiB/s)");
    EXPECT_EQ(datapath::describeThroughput(0, 0), "0 bytes in 0.000 s (0.0 MiB/s)");
}

} // namespace
