// Checksums of BO contents: XXH3-64 as published, streamed in any split, FNV-1a 64 for images of
// earlier versions, and the corruption message.
#include "content/digest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using ::testing::HasSubstr;

std::span<const std::byte> bytesOf(const std::string& s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

uint64_t digestOf(content::DigestKind kind, const std::string& s) {
    content::ContentDigest d(kind);
    d.update(bytesOf(s));
    return d.value();
}

TEST(ContentDigest, GivenKnownInputs_WhenDigestedWithXxh3_ThenThePublishedValuesComeOut) {
    // XXH3_64bits with seed 0, as xxHash's documentation and other implementations give them.
    EXPECT_EQ(digestOf(content::DigestKind::Xxh3_64, ""), 0x2d06800538d394c2ull);
    EXPECT_EQ(digestOf(content::DigestKind::Xxh3_64, "abc"), 0x78af5f94892f3950ull);
    EXPECT_EQ(content::xxh3Of(bytesOf("abc")), 0x78af5f94892f3950ull);
}

TEST(ContentDigest, GivenFnvKind_WhenDigested_ThenItIsFnv1a64) {
    EXPECT_EQ(digestOf(content::DigestKind::Fnv1a64, "foobar"), 0x85944171f73967e8ull);
}

TEST(ContentDigest, GivenDataSplitAnywhere_WhenDigestedInParts_ThenTheValueIsTheOneShotValue) {
    std::string text;
    for (int i = 0; i < 5000; ++i)
        text += static_cast<char>(i * 7 + (i >> 3));
    for (size_t split :
         {size_t{0}, size_t{1}, size_t{63}, size_t{240}, size_t{1024}, size_t{4999}}) {
        content::ContentDigest d;
        d.update(bytesOf(text.substr(0, split)));
        d.update(bytesOf(text.substr(split)));
        EXPECT_EQ(d.value(), content::xxh3Of(bytesOf(text))) << "split at " << split;
    }
}

TEST(ContentDigest, GivenADigestMovedAway_WhenUpdated_ThenItContinuesWhereItWas) {
    content::ContentDigest a;
    a.update(bytesOf("hello "));
    content::ContentDigest b = std::move(a);
    b.update(bytesOf("world"));
    EXPECT_EQ(b.checksum(), (content::ContentChecksum{content::DigestKind::Xxh3_64,
                                                      content::xxh3Of(bytesOf("hello world"))}));
}

TEST(ContentDigest, GivenAMismatch_WhenVerified_ThenTheImageIsNamedCorruptWithBothValues) {
    content::ContentChecksum want{content::DigestKind::Xxh3_64, 0x1111};
    EXPECT_TRUE(content::verifyChecksum("x.img", want, 0x1111).ok());
    auto r = content::verifyChecksum("x.img", want, 0x2222);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), base::ErrorCode::Image);
    EXPECT_THAT(
        r.error().describe(),
        HasSubstr("x.img is corrupt: its XXH3-64 checksum is 0000000000002222, the dump recorded "
                  "0000000000001111"));
    EXPECT_STREQ(content::digestName(content::DigestKind::Fnv1a64), "FNV-1a 64");
}

} // namespace
