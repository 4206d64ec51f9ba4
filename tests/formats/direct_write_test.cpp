// Packed files written past the page cache (`direct-write`, ImageWriter::writeDirect): the
// write-behind worker writes whole page-aligned blocks with O_DIRECT and carries the bytes after
// the last one into the next buffer. The files are byte for byte those written through the page
// cache, every frame size and every way of handing the bytes over; only the first block (the
// size header and what follows it) and the last one go through the page cache. Read back, they
// stay out of it, unless much of the file is in it already.
//
// The files are made in the test's working directory (the build tree, on a disk), not in
// $TMPDIR, which may be a tmpfs: there the page cache is the file.
#include "formats/content_keys.h"
#include "formats/packed_image.h"

#include "temp_dir.h"
#include "test_keys.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

namespace {
namespace fs = std::filesystem;

constexpr size_t kFrame = formats::kPackedFrameRaw;
constexpr size_t kBlock = 4096;

enum class Kind { Raw, Compressed, Sealed };

struct Case {
    Kind kind;
    size_t size;  ///< contents bytes
    size_t piece; ///< how many the lane hands over at a time
};

std::string describe(const Case& c) {
    const char* kinds[] = {"Raw", "Compressed", "Sealed"};
    return std::string(kinds[static_cast<int>(c.kind)]) + "_" + std::to_string(c.size) +
           "_bytes_in_pieces_of_" + std::to_string(c.piece);
}
std::string nameOf(const ::testing::TestParamInfo<Case>& info) {
    return describe(info.param);
}
void PrintTo(const Case& c, std::ostream* os) {
    *os << describe(c);
}

/// Bytes of which some runs compress and some do not, so frames have every size.
std::vector<std::byte> contentsOf(size_t n) {
    std::mt19937_64 rng(11);
    std::vector<std::byte> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = (i / 100'000) % 3 == 0 ? static_cast<std::byte>(rng()) : std::byte((i / 64) % 5);
    return v;
}

std::vector<std::byte> fileBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), {});
    std::vector<std::byte> bytes(chars.size());
    memcpy(bytes.data(), chars.data(), chars.size());
    return bytes;
}

/// The blocks of `path` that are in the page cache, as mincore tells them for a mapping of it (a
/// read that may not wait, RWF_NOWAIT, would start the kernel's read-ahead of the blocks it
/// finds missing, and the next ones asked about would then be there).
std::vector<size_t> cachedBlocks(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return {~size_t{0}};
    size_t size = static_cast<size_t>(lseek(fd, 0, SEEK_END));
    void* mapped = size ? mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0) : nullptr;
    close(fd);
    if (mapped == MAP_FAILED)
        return {~size_t{0}};
    std::vector<unsigned char> resident((size + kBlock - 1) / kBlock);
    bool known = !size || mincore(mapped, size, resident.data()) == 0;
    if (size)
        munmap(mapped, size);
    if (!known)
        return {~size_t{0}};
    std::vector<size_t> cached;
    for (size_t i = 0; i < resident.size(); ++i)
        if (resident[i] & 1)
            cached.push_back(i);
    return cached;
}

struct DirectWrite : ::testing::TestWithParam<Case> {
    testsupport::TempDir keysDir;
    testsupport::KeyFiles keys = testsupport::writeTestKeys(keysDir.path());
    fs::path root = fs::current_path() / ("direct-write-" + std::to_string(getpid()));
    std::string name = formats::packedImageName("amdgpu-drm-pages-1-128-0000.img");
    std::vector<std::byte> bytes = contentsOf(GetParam().size);

    DirectWrite() {
        fs::remove_all(root);
        fs::create_directories(root / "direct");
        fs::create_directories(root / "cached");
    }
    ~DirectWrite() override { fs::remove_all(root); }

    std::unique_ptr<formats::ImageStore> storeIn(const std::string& dir, bool direct) {
        auto store = formats::openDirectoryStore((root / dir).string()).value();
        store->setDirectWrites(direct);
        bool sealed = GetParam().kind == Kind::Sealed;
        store->contentKeys().configure({sealed ? formats::Cipher::Aes256Gcm : formats::Cipher::None,
                                        keys.certificate, sealed ? keys.privateKey : ""});
        return store;
    }

    /// Writes the contents into `dir`, handed over GetParam().piece bytes at a time.
    void write(const std::string& dir, bool direct) {
        auto store = storeIn(dir, direct);
        formats::CodecSpec spec = GetParam().kind == Kind::Compressed
                                      ? formats::CodecSpec{formats::Codec::Lz4, 0}
                                      : formats::CodecSpec{formats::Codec::None, 0};
        auto out = formats::createContentsImage(*store, name, bytes.size(), spec);
        ASSERT_TRUE(out.ok()) << out.error().describe();
        for (size_t at = 0; at < bytes.size(); at += GetParam().piece) {
            auto piece =
                std::span(bytes).subspan(at, std::min(GetParam().piece, bytes.size() - at));
            ASSERT_TRUE((*out)->write(piece).ok());
        }
        auto closed = (*out)->close();
        ASSERT_TRUE(closed.ok()) << closed.error().describe();
    }

    std::vector<std::byte> readBack(const std::string& dir) {
        auto store = storeIn(dir, true);
        auto in = formats::openContentsImage(*store, name);
        EXPECT_TRUE(in.ok()) << in.error().describe();
        if (!in.ok())
            return {};
        std::vector<std::byte> back(bytes.size());
        auto r = in->reader->readExact(back);
        EXPECT_TRUE(r.ok()) << r.error().describe();
        return back;
    }
};

TEST_P(DirectWrite, GivenAPackedFileWrittenPastThePageCache_WhenReadBack_ThenItIsTheOneThroughIt) {
    write("direct", true);
    write("cached", false);
    std::string direct = (root / "direct" / name).string(), cached = (root / "cached" / name);
    EXPECT_TRUE(readBack("direct") == bytes);
    if (GetParam().kind == Kind::Sealed) // a key and nonces of their own: the sizes match
        EXPECT_EQ(fs::file_size(direct), fs::file_size(cached));
    else
        EXPECT_TRUE(fileBytes(direct) == fileBytes(cached)) << "the same bytes, byte for byte";
}

TEST_P(DirectWrite,
       GivenAPackedFileWrittenPastThePageCache_ThenOnlyItsFirstAndLastBlocksAreCached) {
    write("direct", true);
    write("cached", false);
    std::string direct = (root / "direct" / name).string(), cached = (root / "cached" / name);
    size_t blocks = (fs::file_size(direct) + kBlock - 1) / kBlock;
    std::vector<size_t> through = cachedBlocks(cached);
    ASSERT_EQ(through.size(), (fs::file_size(cached) + kBlock - 1) / kBlock)
        << "written through the page cache, every block of the file is in it";
    std::vector<size_t> past = cachedBlocks(direct);
    for (size_t block : past)
        EXPECT_TRUE(block == 0 || block == blocks - 1)
            << "block " << block << " of " << blocks << " went through the page cache";
}

// Read back, a packed file of more than one frame is read past the page cache too
// (formats/src/direct_stream.h), unless much of it is in the page cache already.
TEST_P(DirectWrite,
       GivenAPackedFileOnTheDisk_WhenFetchedAheadAndReadBack_ThenItStaysOutOfTheCache) {
    write("direct", true);
    std::string direct = (root / "direct" / name).string();
    size_t blocks = (fs::file_size(direct) + kBlock - 1) / kBlock;
    storeIn("direct", true)->readAhead(name, fs::file_size(direct));
    EXPECT_TRUE(readBack("direct") == bytes);
    std::vector<size_t> cached = cachedBlocks(direct);
    if (GetParam().size <= kFrame) {
        EXPECT_EQ(cached.size(), blocks) << "a file of one frame is read through the page cache";
        return;
    }
    for (size_t block : cached)
        EXPECT_TRUE(block == 0 || block == blocks - 1)
            << "block " << block << " of " << blocks << " was read through the page cache";
}

TEST_P(DirectWrite, GivenAPackedFileHalfInThePageCache_WhenReadBack_ThenReadThroughIt) {
    write("direct", true);
    std::string direct = (root / "direct" / name).string();
    size_t size = fs::file_size(direct), blocks = (size + kBlock - 1) / kBlock;
    {
        std::ifstream in(direct, std::ios::binary); // its first half into the page cache
        std::vector<char> half(size / 2);
        in.read(half.data(), static_cast<std::streamsize>(half.size()));
    }
    EXPECT_TRUE(readBack("direct") == bytes);
    // Read past the page cache, the half not in it would stay out of it. (A few pages may be
    // under the kernel's hand when asked about, so not every one is required.)
    EXPECT_GE(cachedBlocks(direct).size(), blocks * 9 / 10)
        << "read through the page cache, as the half of it there says the rest may be soon";
}

// Raw frames (incompressible, not encrypted) are copied into the writer's buffer to be written
// past the page cache; compressed and sealed ones are encoded there. A file of one frame is
// written without a worker; pieces smaller than a frame, or not dividing it, are gathered.
INSTANTIATE_TEST_SUITE_P(
    FrameKindsAndSizes, DirectWrite,
    ::testing::Values(Case{Kind::Raw, 6 * kFrame, kFrame}, Case{Kind::Raw, 3 * kFrame + 5, 1000},
                      Case{Kind::Raw, kFrame + 1, kFrame}, Case{Kind::Raw, 100, 100},
                      Case{Kind::Compressed, 7 * kFrame + 4097, kFrame},
                      Case{Kind::Compressed, 5 * kFrame, 3 * kFrame + 7},
                      Case{Kind::Sealed, 5 * kFrame + 123, kFrame},
                      Case{Kind::Sealed, 4 * kFrame, 12345}, Case{Kind::Sealed, 10, 10}),
    nameOf);

} // namespace
