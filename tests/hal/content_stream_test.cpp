// Content streaming through a bounded staging buffer: exact bytes, bounded chunks, digests and
// byte-range context on errors.
#include "hal/content_stream.h"

#include "content_fakes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using haltest::MemoryReader;
using haltest::MemoryWriter;
using haltest::PatternCheckSink;
using haltest::PatternSource;
using hal::ErrorCode;
using ::testing::HasSubstr;

constexpr uint64_t kCapacity = 4096;

uint64_t fnvOf(std::span<const std::byte> data) {
    hal::Fnv1a64 d;
    d.update(data);
    return d.value();
}

uint64_t fnvOf(const std::string& s) { return fnvOf(std::as_bytes(std::span(s.data(), s.size()))); }

TEST(Fnv1a64, GivenKnownInputs_WhenDigested_ThenThePublishedValuesComeOut) {
    EXPECT_EQ(fnvOf(std::string()), 0xcbf29ce484222325ull);
    EXPECT_EQ(fnvOf(std::string("a")), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(fnvOf(std::string("foobar")), 0x85944171f73967e8ull);
}

TEST(Fnv1a64, GivenDataSplitAnywhere_WhenDigestedInParts_ThenTheValueIsTheSame) {
    std::string s = "the quick brown fox jumps over the lazy dog";
    hal::Fnv1a64 parts;
    parts.update(std::as_bytes(std::span(s.data(), 10)));
    parts.update(std::as_bytes(std::span(s.data() + 10, s.size() - 10)));

    EXPECT_EQ(parts.value(), fnvOf(s));
}

TEST(StagingBuffer, GivenASmallOrUnalignedCapacity_WhenCreated_ThenItIsAtLeastAPageAndPageAligned) {
    EXPECT_EQ(hal::StagingBuffer(1).capacity(), 4096u);
    EXPECT_EQ(hal::StagingBuffer(4096).capacity(), 4096u);
    EXPECT_EQ(hal::StagingBuffer(4097).capacity(), 8192u);
    hal::StagingBuffer b(1 << 20);
    EXPECT_EQ(b.capacity(), 1u << 20);
    EXPECT_EQ(b.span().size(), 1u << 20);
}

class ContentSizes : public ::testing::TestWithParam<uint64_t> {};

TEST_P(ContentSizes, GivenASize_WhenDumped_ThenExactBytesInChunksNoLargerThanTheBuffer) {
    const uint64_t size = GetParam();
    hal::StagingBuffer staging(kCapacity);
    ASSERT_EQ(staging.capacity(), kCapacity);
    PatternSource source;
    MemoryWriter writer;
    hal::Fnv1a64 digest;

    auto r = hal::dumpContents(source, size, writer, staging, &digest);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(writer.bytes, haltest::patternBytes(size));
    EXPECT_LE(source.maxChunk(), kCapacity);
    EXPECT_EQ(source.calls(), (size + kCapacity - 1) / kCapacity);
    EXPECT_EQ(digest.value(), fnvOf(haltest::patternBytes(size)));
}

TEST_P(ContentSizes, GivenAnImage_WhenRestored_ThenExactBytesInChunksNoLargerThanTheBuffer) {
    const uint64_t size = GetParam();
    hal::StagingBuffer staging(kCapacity);
    MemoryReader reader(haltest::patternBytes(size));
    PatternCheckSink sink;
    hal::Fnv1a64 digest;

    auto r = hal::restoreContents(reader, size, sink, staging, &digest);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(sink.received(), size);
    EXPECT_EQ(sink.mismatches(), 0u);
    EXPECT_LE(sink.maxChunk(), kCapacity);
    EXPECT_LE(reader.maxChunk(), kCapacity);
    EXPECT_EQ(digest.value(), fnvOf(haltest::patternBytes(size)));
}

INSTANTIATE_TEST_SUITE_P(AroundTheCapacity, ContentSizes,
                         ::testing::Values(0, 1, kCapacity - 1, kCapacity, kCapacity + 1,
                                           10 * kCapacity + 7),
                         [](const ::testing::TestParamInfo<uint64_t>& info) {
                             return "Bytes" + std::to_string(info.param);
                         });

TEST(ContentStream, GivenNoDigest_WhenDumped_ThenTheBytesStillArrive) {
    hal::StagingBuffer staging(kCapacity);
    PatternSource source;
    MemoryWriter writer;

    ASSERT_TRUE(hal::dumpContents(source, 3 * kCapacity, writer, staging).ok());

    EXPECT_EQ(writer.bytes, haltest::patternBytes(3 * kCapacity));
}

TEST(ContentStream, GivenTheSourceFailsInTheSecondChunk_WhenDumped_ThenTheErrorNamesThatByteRange) {
    hal::StagingBuffer staging(kCapacity);
    PatternSource source;
    source.failAt(kCapacity + 10);
    MemoryWriter writer;

    auto r = hal::dumpContents(source, 3 * kCapacity, writer, staging);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Kernel);
    EXPECT_EQ(r.error().sysErrno(), EIO);
    EXPECT_THAT(r.error().describe(), HasSubstr("reading bytes 4096..8192 from the device"));
    EXPECT_EQ(writer.bytes.size(), kCapacity);
}

TEST(ContentStream, GivenTheWriterFails_WhenDumped_ThenItsErrorPropagates) {
    hal::StagingBuffer staging(kCapacity);
    PatternSource source;
    MemoryWriter writer;
    writer.failAfter(kCapacity);

    auto r = hal::dumpContents(source, 3 * kCapacity, writer, staging);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Io);
    EXPECT_EQ(r.error().sysErrno(), ENOSPC);
    EXPECT_EQ(source.calls(), 2u);
}

TEST(ContentStream, GivenTheSinkFailsInTheLastChunk_WhenRestored_ThenTheErrorNamesThatByteRange) {
    hal::StagingBuffer staging(kCapacity);
    const uint64_t size = 2 * kCapacity + 7;
    MemoryReader reader(haltest::patternBytes(size));
    PatternCheckSink sink;
    sink.failAt(2 * kCapacity + 3);

    auto r = hal::restoreContents(reader, size, sink, staging);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().sysErrno(), EFAULT);
    EXPECT_THAT(r.error().describe(), HasSubstr("writing bytes 8192..8199 to the device"));
}

TEST(ContentStream, GivenAnImageShorterThanTheSize_WhenRestored_ThenImageError) {
    hal::StagingBuffer staging(kCapacity);
    MemoryReader reader(haltest::patternBytes(kCapacity + 1));
    PatternCheckSink sink;

    auto r = hal::restoreContents(reader, 2 * kCapacity, sink, staging);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("test.img"));
}

// Per-GPU threads each stream through their own StagingBuffer. When not even one page can be
// mapped, every buffer falls back to memory of its own: two live buffers never share bytes.
TEST(StagingBuffer, GivenNoAddressSpaceLeft_ThenEachBufferStillHasItsOwnPage) {
    pid_t pid = fork();
    if (pid == 0) {
        // The limit is what the process maps now: any further mmap fails with ENOMEM.
        long pages = 0;
        FILE* statm = fopen("/proc/self/statm", "r");
        if (!statm || fscanf(statm, "%ld", &pages) != 1)
            _exit(3);
        fclose(statm);
        rlimit limit{static_cast<rlim_t>(pages) * 4096, static_cast<rlim_t>(pages) * 4096};
        if (setrlimit(RLIMIT_AS, &limit) != 0)
            _exit(3);
        if (mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED)
            _exit(2); // the limit does not hold: the test proves nothing
        hal::StagingBuffer a(1 << 20), b(1 << 20);
        if (a.capacity() != 4096 || b.capacity() != 4096)
            _exit(4);
        a.span()[0] = std::byte{1};
        b.span()[0] = std::byte{2};
        _exit(a.span().data() != b.span().data() && a.span()[0] == std::byte{1} ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "the child died";
    EXPECT_EQ(WEXITSTATUS(status), 0)
        << "1: two buffers share their fallback page; 2: mmap did not fail under the limit; "
           "3: no limit; 4: not a one-page fallback";
}

} // namespace
