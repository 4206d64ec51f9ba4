// DirectStream (formats/src/direct_stream.h): a file read past the page cache in aligned blocks
// of 2 MiB, two reads in flight, served in order from any offset. The files are made in the
// test's working directory (the build tree, on a disk), not in $TMPDIR, which may be a tmpfs.
#include "direct_stream.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

namespace {
namespace fs = std::filesystem;

constexpr size_t kBlock = formats::DirectStream::kBlock;

struct DirectStreamTest : ::testing::Test {
    fs::path path = fs::current_path() / ("direct-stream-" + std::to_string(getpid()) + ".img");
    std::vector<std::byte> bytes;

    ~DirectStreamTest() override { fs::remove(path); }

    void makeFile(size_t n) {
        std::mt19937_64 rng(5);
        bytes.resize(n);
        for (std::byte& b : bytes)
            b = static_cast<std::byte>(rng());
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(n));
    }
    /// The file opened past the page cache, as the store opens it.
    int openDirect() {
        int fd = open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
        EXPECT_GE(fd, 0) << "the build tree's file system takes O_DIRECT";
        return fd;
    }
};

TEST_F(
    DirectStreamTest,
    GivenAFileOfBlocksAndAPart_WhenReadFromItsEighthByteInPiecesOfOddSizes_ThenEachByteIsItsOwn) {
    makeFile(5 * kBlock + 12345);
    formats::DirectStream stream(openDirect(), 8, bytes.size());
    ASSERT_TRUE(stream.started());
    std::vector<std::byte> back;
    size_t sizes[] = {1, 4095, kBlock + 3, 7, 3 * kBlock};
    size_t at = 8;
    for (size_t i = 0; at < bytes.size(); ++i) {
        size_t n = std::min(sizes[i % std::size(sizes)], bytes.size() - at);
        std::vector<std::byte> piece(n);
        ASSERT_TRUE(stream.read(piece)) << "at byte " << at;
        back.insert(back.end(), piece.begin(), piece.end());
        at += n;
    }
    EXPECT_TRUE(std::equal(back.begin(), back.end(), bytes.begin() + 8, bytes.end()));
}

TEST_F(DirectStreamTest, GivenAFileShorterThanTheStreamWasTold_WhenReadToThatEnd_ThenItRefuses) {
    makeFile(2 * kBlock + 100);
    formats::DirectStream stream(openDirect(), 0, bytes.size() + kBlock);
    ASSERT_TRUE(stream.started());
    std::vector<std::byte> first(2 * kBlock);
    ASSERT_TRUE(stream.read(first)) << "the blocks the file has are served";
    EXPECT_TRUE(std::equal(first.begin(), first.end(), bytes.begin()));
    std::vector<std::byte> rest(100 + kBlock);
    EXPECT_FALSE(stream.read(rest)) << "the block the file does not have in full is refused";
    std::vector<std::byte> more(1);
    EXPECT_FALSE(stream.read(more)) << "and nothing after it is served";
}

TEST_F(DirectStreamTest, GivenAStreamLeftAfterItsFirstByte_WhenDropped_ThenItsReadersStop) {
    makeFile(20 * kBlock);
    {
        formats::DirectStream stream(openDirect(), 0, bytes.size());
        std::byte one[1];
        ASSERT_TRUE(stream.read(one));
        EXPECT_EQ(one[0], bytes[0]);
    } // the readers are joined here, with blocks still ahead of them
    formats::DirectStream again(openDirect(), kBlock, bytes.size());
    std::byte one[1];
    ASSERT_TRUE(again.read(one));
    EXPECT_EQ(one[0], bytes[kBlock]) << "a stream may start at any block";
}

TEST_F(DirectStreamTest, GivenAStartAtTheFilesEnd_ThenItDoesNotStartAndServesNothing) {
    makeFile(kBlock + 10);
    formats::DirectStream stream(openDirect(), bytes.size(), bytes.size());
    EXPECT_FALSE(stream.started());
    std::byte one[1];
    EXPECT_FALSE(stream.read(one));
}

} // namespace
