// The staging buffer and FNV-1a 64 (the checksum of earlier versions' images).
#include "hal/content_stream.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace {

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

} // namespace
