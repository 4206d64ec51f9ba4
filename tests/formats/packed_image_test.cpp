// Packed contents files (content-compression): the name CRIU's plugin does not find, frames
// written and read back byte for byte across frame and write boundaries, and damage named.
#include "formats/packed_image.h"

#include "read_in_steps.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

namespace {
using ::testing::HasSubstr;

/// Bytes that compress: a short period, with zeros between.
std::vector<std::byte> compressible(size_t n) {
    std::vector<std::byte> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = (i / 8192) % 3 == 0 ? std::byte{0} : static_cast<std::byte>(i % 251);
    return v;
}

struct Packed {
    testsupport::TempDir dir;
    std::unique_ptr<formats::ImageStore> store = formats::openDirectoryStore(dir.path()).value();
    std::string name = formats::packedImageName("amdgpu-drm-pages-1-128-0000.img");

    /// Writes `bytes` with `spec`, in writes of `step` bytes, the second quarter as zeros.
    void write(const std::vector<std::byte>& bytes, const formats::CodecSpec& spec, size_t step) {
        auto out = formats::createContentsImage(*store, name, bytes.size(), spec);
        ASSERT_TRUE(out.ok()) << out.error().message();
        const size_t quarter = bytes.size() / 4, half = bytes.size() / 2;
        for (auto [from, to, zeros] :
             {std::tuple{size_t{0}, quarter, false}, std::tuple{quarter, half, true},
              std::tuple{half, bytes.size(), false}})
            for (size_t at = from; at < to; at += step) {
                size_t n = std::min(step, to - at);
                auto wrote =
                    zeros ? (*out)->writeZeros(n) : (*out)->write(std::span(bytes).subspan(at, n));
                ASSERT_TRUE(wrote.ok()) << wrote.error().message();
            }
        ASSERT_TRUE((*out)->close().ok());
    }
    /// Overwrites the magic of the file's second frame (after the size header, the first
    /// frame's header and its stored bytes).
    void damageSecondFrame() {
        std::string file = testsupport::readFile(dir / name);
        uint32_t stored = 0;
        memcpy(&stored, file.data() + 8 + 12, 4);
        file[8 + 16 + stored] = 'X';
        testsupport::writeFile(dir / name, file);
    }
    /// Reads `n` bytes back in reads of `step`, `pause` before each.
    base::Result<std::vector<std::byte>> read(size_t n, size_t step,
                                              std::chrono::milliseconds pause = {}) {
        return testsupport::readInSteps(*store, name, n, step, pause);
    }
};

std::vector<std::byte> withZeroQuarter(std::vector<std::byte> v) {
    std::fill(v.begin() + static_cast<ptrdiff_t>(v.size() / 4),
              v.begin() + static_cast<ptrdiff_t>(v.size() / 2), std::byte{0});
    return v;
}

TEST(PackedImage, GivenOurNamesWhenPackedThenTheyChangeOnceAndOthersNot) {
    EXPECT_EQ(formats::packedImageName("amdgpu-drm-pages-1.img"), "amdgpu-packed-drm-pages-1.img");
    EXPECT_EQ(formats::packedImageName("amdgpu-packed-drm-pages-1.img"),
              "amdgpu-packed-drm-pages-1.img");
    EXPECT_EQ(formats::packedImageName("pages-1.img"), "pages-1.img");
    EXPECT_TRUE(formats::isPackedImageName("amdgpu-packed-delta-drm-pages-1.img"));
    EXPECT_TRUE(formats::isPackedImageName("../ck1/amdgpu-packed-drm-pages-1.img")) << "a parent's";
    EXPECT_FALSE(formats::isPackedImageName("amdgpu-packed/amdgpu-drm-pages-1.img"));
}

TEST(PackedImage, GivenEachCodecWhenWrittenAndReadInOtherStepsThenEveryByteComesBack) {
    const size_t n = 2 * formats::kPackedFrameRaw + 12345; // three frames, the last short
    auto bytes = compressible(n);
    for (const char* codec : {"lz4", "zstd:1", "zstd:9"}) {
        Packed p;
        auto spec = formats::parseCodec(codec);
        ASSERT_TRUE(spec.ok());
        ASSERT_NO_FATAL_FAILURE(p.write(bytes, *spec, 1 << 20));
        auto back = p.read(n, 300000);
        ASSERT_TRUE(back.ok()) << codec << ": " << back.error().message();
        EXPECT_TRUE(back.value() == withZeroQuarter(bytes)) << codec;
        EXPECT_LT(std::filesystem::file_size(p.dir / p.name), n / 2) << codec << " compresses";
    }
}

TEST(PackedImage, GivenADamagedFrameWhenReadThenAnErrorNamingTheFileAndTheFrame) {
    Packed p;
    auto bytes = compressible(2 * formats::kPackedFrameRaw);
    ASSERT_NO_FATAL_FAILURE(p.write(bytes, formats::parseCodec("zstd").value(), 4096));
    p.damageSecondFrame();
    auto back = p.read(bytes.size(), 1 << 20);
    ASSERT_FALSE(back.ok());
    EXPECT_THAT(back.error().message(),
                HasSubstr(p.name + ": frame 1 (contents bytes from 2097152)"));
}

TEST(PackedImage, GivenAFileCutInAFrameWhenReadThenAnErrorAndGivenTooManyFramesThenToo) {
    Packed p;
    auto bytes = compressible(formats::kPackedFrameRaw + 100);
    ASSERT_NO_FATAL_FAILURE(p.write(bytes, formats::parseCodec("lz4").value(), 1 << 20));
    std::string file = testsupport::readFile(p.dir / p.name);
    testsupport::writeFile(p.dir / p.name, file.substr(0, file.size() - 3));
    EXPECT_FALSE(p.read(bytes.size(), 1 << 20).ok());
    testsupport::writeFile(p.dir / p.name, file + file.substr(8));
    auto longer = p.read(bytes.size(), 1 << 20);
    ASSERT_FALSE(longer.ok());
    EXPECT_THAT(longer.error().message(), HasSubstr("too long"));
}

std::vector<std::byte> randomBytes(size_t n) {
    std::mt19937_64 rng(7);
    std::vector<std::byte> v(n);
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t x = rng();
        memcpy(v.data() + i, &x, 8);
    }
    return v;
}

// Whole frames handed over at once are encoded from the writer's caller's bytes and, when they
// do not compress, written from them; the reader reads ahead on its worker, and skip() passes
// over bytes across frames without serving them.
TEST(PackedImage,
     GivenWholeFramesThatDoNotCompress_WhenReadAndSkippedAcrossFrames_ThenEveryByteComesBack) {
    Packed p;
    const size_t n = 4 * formats::kPackedFrameRaw + 777; // five frames
    auto bytes = randomBytes(n);
    ASSERT_NO_FATAL_FAILURE(p.write(bytes, formats::parseCodec("lz4").value(), 3 * (1 << 20)));
    // The first frame (random bytes, handed over whole) is stored raw: codec 0, all its bytes.
    std::string file = testsupport::readFile(p.dir / p.name);
    auto first = formats::readFrameHeader(std::as_bytes(std::span(file)).subspan(8));
    ASSERT_TRUE(first.ok()) << first.error().message();
    EXPECT_EQ(first->codec, formats::Codec::None);
    EXPECT_EQ(first->storedSize, formats::kPackedFrameRaw);
    EXPECT_EQ(
        0, memcmp(file.data() + 8 + formats::kFrameHeader, bytes.data(), formats::kPackedFrameRaw));
    auto expected = withZeroQuarter(bytes);

    auto in = formats::openContentsImage(*p.store, p.name);
    ASSERT_TRUE(in.ok()) << in.error().message();
    std::vector<std::byte> head(1000), tail(n - 1000 - 3 * formats::kPackedFrameRaw);
    ASSERT_TRUE(in->reader->readExact(head).ok());
    ASSERT_TRUE(in->reader->skip(3 * formats::kPackedFrameRaw).ok());
    ASSERT_TRUE(in->reader->readExact(tail).ok());
    EXPECT_TRUE(std::equal(head.begin(), head.end(), expected.begin()));
    EXPECT_TRUE(
        std::equal(tail.begin(), tail.end(), expected.end() - static_cast<ptrdiff_t>(tail.size())));
    auto end = formats::expectImageEnd(*in, n);
    EXPECT_TRUE(end.ok()) << end.error().message();

    // A reader dropped in its first frame stops its worker (the test would hang otherwise).
    auto dropped = formats::openContentsImage(*p.store, p.name);
    ASSERT_TRUE(dropped.ok());
    ASSERT_TRUE(dropped->reader->readExact(std::span(head).first(10)).ok());
}

// Reads of whole frames from a frame's start are decoded straight into the caller's buffer,
// other reads from the reader's: the same bytes, frames stored raw and compressed alike.
TEST(PackedImage, GivenReadsOfWholeFramesAndOfPieces_WhenRead_ThenTheSameBytes) {
    const size_t n = 3 * formats::kPackedFrameRaw + 4321;
    auto bytes = randomBytes(n);
    std::fill(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(formats::kPackedFrameRaw),
              std::byte{3}); // the first frame compresses, the others are stored raw
    for (const char* codec : {"lz4", "zstd:3"}) {
        Packed p;
        ASSERT_NO_FATAL_FAILURE(p.write(bytes, formats::parseCodec(codec).value(), 1 << 20));
        for (size_t step : {formats::kPackedFrameRaw, 2 * formats::kPackedFrameRaw, n,
                            formats::kPackedFrameRaw - 1}) {
            auto back = p.read(n, step);
            ASSERT_TRUE(back.ok()) << codec << ": " << back.error().message();
            EXPECT_TRUE(back.value() == withZeroQuarter(bytes)) << codec << ", reads of " << step;
        }
    }
}

// A caller slower than the disk: the reader, out of free slots, decompresses the newest frames it
// read itself, and the caller copies them: the same bytes, read whole or in pieces; a frame whose
// compressed bytes are damaged is refused when the caller reaches it, naming the frame.
TEST(PackedImage, GivenACallerSlowerThanTheReader_WhenRead_ThenTheFramesDecodedAsideAreTheSame) {
    const size_t n = 8 * formats::kPackedFrameRaw;
    auto bytes = compressible(n);
    for (const char* codec : {"lz4", "zstd:1"}) {
        Packed p;
        ASSERT_NO_FATAL_FAILURE(p.write(bytes, formats::parseCodec(codec).value(), 1 << 20));
        for (size_t step : {formats::kPackedFrameRaw, formats::kPackedFrameRaw + 1}) {
            auto back = p.read(n, step, std::chrono::milliseconds(3));
            ASSERT_TRUE(back.ok()) << codec << ": " << back.error().message();
            EXPECT_TRUE(back.value() == withZeroQuarter(bytes)) << codec << ", reads of " << step;
        }
        // The last frame's compressed bytes damaged, past its header.
        std::string file = testsupport::readFile(p.dir / p.name);
        file[file.size() - 20] = static_cast<char>(file[file.size() - 20] ^ 0x55);
        file[file.size() - 40] = static_cast<char>(file[file.size() - 40] ^ 0x55);
        testsupport::writeFile(p.dir / p.name, file);
        auto damaged = p.read(n, formats::kPackedFrameRaw, std::chrono::milliseconds(3));
        ASSERT_FALSE(damaged.ok()) << codec;
        EXPECT_THAT(damaged.error().message(), HasSubstr(p.name + ": frame 7")) << codec;
    }
}

TEST(PackedImage, GivenADamagedFrame_WhenReadAgainAfterTheError_ThenTheSameErrorEachTime) {
    Packed p;
    auto bytes = compressible(3 * formats::kPackedFrameRaw);
    ASSERT_NO_FATAL_FAILURE(p.write(bytes, formats::parseCodec("lz4").value(), 4096));
    p.damageSecondFrame();
    auto in = formats::openContentsImage(*p.store, p.name);
    ASSERT_TRUE(in.ok());
    std::vector<std::byte> back(bytes.size());
    auto first = in->reader->readExact(back);
    ASSERT_FALSE(first.ok());
    EXPECT_THAT(first.error().message(), HasSubstr("frame 1 (contents bytes from 2097152)"));
    auto again = in->reader->readExact(std::span(back).first(1));
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().message(), first.error().message());
}

TEST(PackedImage, GivenOnlyThePackedFileWhenTheStoredNameIsAskedThenItIsThePackedOne) {
    Packed p;
    std::string plain = "amdgpu-drm-pages-1-128-0000.img";
    EXPECT_EQ(formats::storedContentsName(*p.store, plain), plain) << "neither: the plain name";
    ASSERT_NO_FATAL_FAILURE(p.write(compressible(4096), formats::parseCodec("lz4").value(), 4096));
    EXPECT_EQ(formats::storedContentsName(*p.store, plain), p.name);
}

} // namespace
