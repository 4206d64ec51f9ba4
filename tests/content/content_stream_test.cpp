// The staging buffer and FNV-1a 64 (the checksum of earlier versions' images).
#include "content/stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

uint64_t fnvOf(std::span<const std::byte> data) {
    content::Fnv1a64 d;
    d.update(data);
    return d.value();
}

uint64_t fnvOf(const std::string& s) {
    return fnvOf(std::as_bytes(std::span(s.data(), s.size())));
}

TEST(Fnv1a64, GivenKnownInputs_WhenDigested_ThenThePublishedValuesComeOut) {
    EXPECT_EQ(fnvOf(std::string()), 0xcbf29ce484222325ull);
    EXPECT_EQ(fnvOf(std::string("a")), 0xaf63dc4c8601ec8cull);
    EXPECT_EQ(fnvOf(std::string("foobar")), 0x85944171f73967e8ull);
}

TEST(Fnv1a64, GivenDataSplitAnywhere_WhenDigestedInParts_ThenTheValueIsTheSame) {
    std::string s = "the quick brown fox jumps over the lazy dog";
    content::Fnv1a64 parts;
    parts.update(std::as_bytes(std::span(s.data(), 10)));
    parts.update(std::as_bytes(std::span(s.data() + 10, s.size() - 10)));

    EXPECT_EQ(parts.value(), fnvOf(s));
}

TEST(StagingBuffer, GivenASmallOrUnalignedCapacity_WhenCreated_ThenItIsAtLeastAPageAndPageAligned) {
    EXPECT_EQ(content::StagingBuffer(1).capacity(), 4096u);
    EXPECT_EQ(content::StagingBuffer(4096).capacity(), 4096u);
    EXPECT_EQ(content::StagingBuffer(4097).capacity(), 8192u);
    content::StagingBuffer b(1 << 20);
    EXPECT_EQ(b.capacity(), 1u << 20);
    EXPECT_EQ(b.span().size(), 1u << 20);
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
        content::StagingBuffer a(1 << 20), b(1 << 20);
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
