// The per-chunk frames of compressed BO contents: `content-compression` parses to the codec
// asked for, every codec and level round-trips, data that does not compress is stored raw, and
// every malformed field of a frame is an Image error naming it.
#include "formats/chunk_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace {

using Bytes = std::vector<std::byte>;

constexpr size_t kChunk = 2 << 20;

Bytes randomBytes(size_t size, uint64_t seed) {
    std::mt19937_64 rng(seed);
    Bytes data(size);
    for (size_t i = 0; i < size; i += 8) {
        uint64_t v = rng();
        memcpy(data.data() + i, &v, std::min<size_t>(8, size - i));
    }
    return data;
}

/// Bytes that compress: short words from a small alphabet, like text.
Bytes textLike(size_t size) {
    static const char* const kWords[] = {"tensor ", "weight ", "bias ", "layer ", "gpu "};
    std::mt19937 rng(7);
    Bytes data(size);
    for (size_t i = 0; i < size;) {
        const char* w = kWords[rng() % 5];
        for (size_t k = 0; w[k] && i < size; ++k)
            data[i++] = static_cast<std::byte>(w[k]);
    }
    return data;
}

formats::CodecSpec spec(const char* text) {
    auto s = formats::parseCodec(text);
    EXPECT_TRUE(s.ok()) << text;
    return s.valueOr({});
}

/// The frame of `raw`, copied out of the encoder's buffer.
Bytes encode(const formats::CodecSpec& s, const Bytes& raw) {
    Bytes out(formats::maxFrameSize(raw.size()));
    auto frame = formats::encodeChunk(s, raw, out);
    EXPECT_TRUE(frame.ok()) << frame.error().message();
    if (!frame.ok())
        return {};
    return Bytes(frame->begin(), frame->end());
}

formats::Codec codecOf(const Bytes& frame) {
    auto h = formats::readFrameHeader(frame);
    EXPECT_TRUE(h.ok());
    return h.ok() ? h->codec : formats::Codec::None;
}

/// The message of decoding `frame` into `room` bytes, which must fail.
std::string decodeError(const Bytes& frame, size_t room) {
    Bytes out(room);
    auto n = formats::decodeChunk(frame, out);
    EXPECT_FALSE(n.ok());
    if (n.ok())
        return {};
    EXPECT_EQ(n.error().code(), base::ErrorCode::Image);
    return n.error().message();
}

void putU32(Bytes& frame, size_t at, uint32_t v) {
    for (size_t i = 0; i < 4; ++i)
        frame[at + i] = static_cast<std::byte>(v >> (8 * i));
}

TEST(ChunkCodec, GivenEachSpellingWhenParsedThenTheCodecAndLevelAreThoseAskedFor) {
    EXPECT_EQ(spec("none"), (formats::CodecSpec{formats::Codec::None, 0}));
    EXPECT_EQ(spec("lz4"), (formats::CodecSpec{formats::Codec::Lz4, 0}));
    EXPECT_EQ(spec("zstd"), (formats::CodecSpec{formats::Codec::Zstd, 3}));
    EXPECT_EQ(spec("zstd:1"), (formats::CodecSpec{formats::Codec::Zstd, 1}));
    EXPECT_EQ(spec("zstd:19"), (formats::CodecSpec{formats::Codec::Zstd, 19}));
    for (const char* text : {"none", "lz4", "zstd:1", "zstd:3", "zstd:19"})
        EXPECT_EQ(spec(text).describe(), text);
    EXPECT_EQ(spec("zstd").describe(), "zstd:3");
}

TEST(ChunkCodec, GivenABadSpellingWhenParsedThenTheErrorNamesTheOptionTheTextAndTheForms) {
    for (const char* text : {"", "gzip", "LZ4", "zstd:", "zstd:0", "zstd:20", "zstd:3x", "zstd:-1",
                             "zstd:+3", "zstd: 3", "lz4:1", "none "}) {
        auto s = formats::parseCodec(text);
        ASSERT_FALSE(s.ok()) << text;
        EXPECT_EQ(s.error().code(), base::ErrorCode::Config);
        const std::string& m = s.error().message();
        EXPECT_NE(m.find("content-compression"), std::string::npos) << m;
        std::string quoted = "'";
        quoted.append(text);
        quoted += '\'';
        EXPECT_NE(m.find(quoted), std::string::npos) << m;
        EXPECT_NE(m.find(formats::kCodecForms), std::string::npos) << m;
    }
}

TEST(ChunkCodec, GivenEachCodecAndLevelWhenRoundTrippedThenTheBytesComeBack) {
    for (const char* text : {"none", "lz4", "zstd:1", "zstd:3", "zstd:9", "zstd:19"}) {
        for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, kChunk}) {
            Bytes raw = textLike(size);
            Bytes frame = encode(spec(text), raw);
            ASSERT_LE(frame.size(), formats::maxFrameSize(size));
            Bytes back(size);
            auto n = formats::decodeChunk(frame, back);
            ASSERT_TRUE(n.ok()) << text << " " << size << ": " << n.error().message();
            EXPECT_EQ(*n, size);
            EXPECT_EQ(back, raw) << text << " " << size;
            bool compressed = size >= 4096 && spec(text).codec != formats::Codec::None;
            EXPECT_EQ(codecOf(frame), compressed ? spec(text).codec : formats::Codec::None)
                << text << " " << size;
            if (compressed) {
                EXPECT_LT(frame.size(), size / 2) << text << " " << size;
            }
        }
    }
}

TEST(ChunkCodec, GivenRandomBytesWhenEncodedThenTheyAreStoredRaw) {
    Bytes raw = randomBytes(kChunk, 1);
    for (const char* text : {"lz4", "zstd:1", "zstd:19"}) {
        Bytes frame = encode(spec(text), raw);
        EXPECT_EQ(codecOf(frame), formats::Codec::None) << text;
        ASSERT_EQ(frame.size(), formats::kFrameHeader + kChunk);
        EXPECT_EQ(memcmp(frame.data() + formats::kFrameHeader, raw.data(), kChunk), 0);
    }
}

TEST(ChunkCodec, GivenZerosWhenEncodedThenTheFrameIsTiny) {
    Bytes raw(kChunk);
    for (const char* text : {"lz4", "zstd:1", "zstd:9"}) {
        Bytes frame = encode(spec(text), raw);
        EXPECT_EQ(codecOf(frame), spec(text).codec) << text;
        EXPECT_LT(frame.size(), kChunk / 200) << text;
        Bytes back(kChunk, std::byte{1});
        ASSERT_TRUE(formats::decodeChunk(frame, back).ok());
        EXPECT_EQ(back, raw);
    }
}

TEST(ChunkCodec, GivenBytesThatShrinkByLessThanOneSixtyFourthWhenEncodedThenTheyAreStoredRaw) {
    // Random bytes with every 128th one zero: a codec saves well under 1/64 on them.
    Bytes raw = randomBytes(64 << 10, 2);
    for (size_t i = 0; i < raw.size(); i += 128)
        raw[i] = std::byte{0};
    EXPECT_EQ(codecOf(encode(spec("zstd:19"), raw)), formats::Codec::None);
}

TEST(ChunkCodec, GivenASmallChunkThatCompressesWhenEncodedThenNoProbeStopsIt) {
    // At most 3 x 32 KiB: compressed whole, without samples.
    Bytes raw = randomBytes(96 << 10, 3);
    memset(raw.data() + (40 << 10), 0, 16 << 10);
    EXPECT_EQ(codecOf(encode(spec("lz4"), raw)), formats::Codec::Lz4);
}

TEST(ChunkCodec, GivenSamplesThatDoNotCompressWhenEncodedThenTheChunkIsStoredRaw) {
    // The probe looks at the start, the middle and the end: zeros elsewhere are not seen.
    Bytes raw = randomBytes(kChunk, 4);
    memset(raw.data() + (64 << 10), 0, 512 << 10);
    EXPECT_EQ(codecOf(encode(spec("zstd:3"), raw)), formats::Codec::None);
    // Zeros at the middle are seen, and the whole chunk is compressed.
    memset(raw.data() + kChunk / 2 - (256 << 10), 0, 512 << 10);
    EXPECT_EQ(codecOf(encode(spec("zstd:3"), raw)), formats::Codec::Zstd);
}

TEST(ChunkCodec, GivenAFrameBufferTooSmallWhenEncodingThenItIsAnInvalidArgument) {
    Bytes raw = textLike(4096);
    Bytes out(formats::maxFrameSize(raw.size()) - 1);
    auto frame = formats::encodeChunk(spec("lz4"), raw, out);
    ASSERT_FALSE(frame.ok());
    EXPECT_EQ(frame.error().code(), base::ErrorCode::InvalidArgument);
}

TEST(ChunkCodec, GivenEachMalformedHeaderFieldWhenDecodedThenTheErrorNamesIt) {
    Bytes good = encode(spec("lz4"), textLike(4096));
    ASSERT_EQ(codecOf(good), formats::Codec::Lz4);
    auto damaged = [&](size_t at, uint8_t value) {
        Bytes f = good;
        f[at] = static_cast<std::byte>(value);
        return decodeError(f, 4096);
    };
    EXPECT_NE(damaged(0, 'X').find("magic"), std::string::npos);
    EXPECT_NE(damaged(4, 2).find("version 2"), std::string::npos);
    EXPECT_NE(damaged(5, 3).find("codec 3"), std::string::npos);
    EXPECT_NE(damaged(6, 1).find("flags 0x1"), std::string::npos);
    EXPECT_NE(damaged(7, 1).find("flags 0x100"), std::string::npos);

    Bytes f = good;
    putU32(f, 8, (1u << 30) + 1);
    EXPECT_NE(decodeError(f, 4096).find("raw size 1073741825"), std::string::npos);
    f = good;
    putU32(f, 8, 8192); // larger than the room given
    EXPECT_NE(decodeError(f, 4096).find("raw size 8192 is over the 4096 bytes"), std::string::npos);
    f = good;
    putU32(f, 12, 4096); // a compressed chunk no smaller than its raw size
    EXPECT_NE(decodeError(f, 4096).find("stored size 4096 of a lz4 chunk"), std::string::npos);
    f = good;
    putU32(f, 12, 0);
    EXPECT_NE(decodeError(f, 4096).find("stored size 0 of a lz4 chunk"), std::string::npos);

    Bytes raw = encode(spec("none"), textLike(100));
    ASSERT_EQ(codecOf(raw), formats::Codec::None);
    putU32(raw, 12, 99);
    EXPECT_NE(decodeError(raw, 100).find("stored size 99 of a raw chunk is not its raw size 100"),
              std::string::npos);
}

TEST(ChunkCodec, GivenATruncatedOrLongerFrameWhenDecodedThenTheErrorSaysSo) {
    for (const char* text : {"none", "lz4", "zstd:3"}) {
        Bytes frame = encode(spec(text), textLike(4096));
        for (size_t length = 0; length < frame.size(); ++length) {
            Bytes cut(frame.begin(), frame.begin() + static_cast<long>(length));
            std::string m = decodeError(cut, 4096);
            EXPECT_NE(m.find(length < formats::kFrameHeader ? "header" : "stored size"),
                      std::string::npos)
                << text << " " << length << ": " << m;
        }
        Bytes longer = frame;
        longer.push_back(std::byte{0});
        EXPECT_NE(decodeError(longer, 4096).find("stored size"), std::string::npos) << text;
    }
}

TEST(ChunkCodec, GivenStoredBytesThatDecodeToAnotherSizeWhenDecodedThenTheErrorNamesTheRawSize) {
    Bytes lz4 = encode(spec("lz4"), Bytes(4096));
    putU32(lz4, 8, 8192);
    EXPECT_NE(decodeError(lz4, 8192).find("its lz4 block holds 4096 bytes, its raw size says 8192"),
              std::string::npos);
    Bytes zstd = encode(spec("zstd:3"), Bytes(4096));
    putU32(zstd, 8, 8192);
    EXPECT_NE(decodeError(zstd, 8192).find("records 4096 bytes, its raw size says 8192"),
              std::string::npos);
}

TEST(ChunkCodec, GivenTwoZstdFramesInOneWhenDecodedThenItIsRefused) {
    Bytes one = encode(spec("zstd:3"), Bytes(4096));
    Bytes two = one;
    two.insert(two.end(), one.begin() + formats::kFrameHeader, one.end());
    putU32(two, 12, static_cast<uint32_t>(two.size() - formats::kFrameHeader));
    EXPECT_NE(decodeError(two, 4096).find("not exactly one zstd frame"), std::string::npos);
}

TEST(ChunkCodec, GivenDamagedCompressedBytesWhenDecodedThenItFailsOrFillsOnlyTheRoom) {
    // Every single-byte damage of the stored bytes: an error, or (when the codec cannot tell)
    // bytes of the raw size; never a write past the room (ASan watches that).
    for (const char* text : {"lz4", "zstd:3"}) {
        Bytes frame = encode(spec(text), textLike(4096));
        for (size_t at = formats::kFrameHeader; at < frame.size(); ++at) {
            Bytes f = frame;
            f[at] ^= std::byte{0x5a};
            Bytes out(4096);
            auto n = formats::decodeChunk(f, out);
            if (n.ok())
                EXPECT_EQ(*n, 4096u);
            else
                EXPECT_EQ(n.error().code(), base::ErrorCode::Image);
        }
    }
}

} // namespace
