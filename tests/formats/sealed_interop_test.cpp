// Sealed frames against a second implementation: GnuTLS's AEAD (the library criu links) opens
// the frames formats/content_cipher seals with OpenSSL, and seals frames it opens, for both
// ciphers, with the associated data built here from the format's description in
// content_cipher.h (not from its code). A frame whose tag or associated data is off is refused.
#include "formats/chunk_codec.h"
#include "formats/content_cipher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Case {
    formats::Cipher cipher;
    gnutls_cipher_algorithm_t gnutls;
};

std::vector<std::byte> randomBytes(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::byte> v(n);
    for (auto& b : v)
        b = static_cast<std::byte>(rng());
    return v;
}

void appendLe(std::string& out, uint64_t v, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// The associated data as content_cipher.h describes it.
std::string associatedData(const formats::CheckpointId& id, const std::string& base,
                           uint64_t rawSize, uint64_t index, uint64_t count) {
    std::string ad = "criu-amdgpu sealed frame v1";
    ad.append(reinterpret_cast<const char*>(id.data()), id.size());
    appendLe(ad, base.size(), 4);
    ad += base;
    appendLe(ad, rawSize, 8);
    appendLe(ad, index, 8);
    appendLe(ad, count, 8);
    return ad;
}

struct GnutlsAead {
    gnutls_aead_cipher_hd_t handle = nullptr;
    GnutlsAead(gnutls_cipher_algorithm_t alg, std::span<const std::byte> key) {
        gnutls_datum_t datum{reinterpret_cast<unsigned char*>(const_cast<std::byte*>(key.data())),
                             static_cast<unsigned>(key.size())};
        EXPECT_EQ(gnutls_aead_cipher_init(&handle, alg, &datum), 0);
    }
    ~GnutlsAead() { gnutls_aead_cipher_deinit(handle); }
};

class SealedInterop : public ::testing::TestWithParam<Case> {};

TEST_P(SealedInterop, FramesSealedHereOpenWithGnuTlsAndFramesGnuTlsSealsOpenHere) {
    formats::MasterKey master;
    formats::CheckpointId id;
    for (size_t i = 0; i < master.size(); ++i)
        master[i] = static_cast<std::byte>(i * 7 + 1);
    for (size_t i = 0; i < id.size(); ++i)
        id[i] = static_cast<std::byte>(0xa0 + i);
    auto keys = formats::SealKeys::derive(GetParam().cipher, master, id);
    ASSERT_TRUE(keys.ok()) << keys.error().describe();
    auto aead = formats::Aead::make(*keys);
    ASSERT_TRUE(aead.ok()) << aead.error().describe();
    GnutlsAead theirs(GetParam().gnutls, (*keys)->aeadKey());
    const formats::FramePlace place{"../ck1/amdgpu-packed-kfd-bo-10-1000-0000.img", 5 << 20, 1, 3};
    const std::string ad =
        associatedData(id, "amdgpu-packed-kfd-bo-10-1000-0000.img", 5 << 20, 1, 3);
    std::vector<std::byte> frame = randomBytes(70000, 3);

    // Ours seals; GnuTLS opens.
    std::vector<std::byte> sealed(formats::maxSealedFrame(frame.size()));
    auto s = (*aead)->seal(place, frame, sealed);
    ASSERT_TRUE(s.ok()) << s.error().describe();
    auto header = formats::readSealHeader(*s, sealed.size());
    ASSERT_TRUE(header.ok()) << header.error().describe();
    EXPECT_EQ(header->sealedSize, frame.size() + formats::kTagBytes);
    std::vector<std::byte> opened(frame.size());
    size_t length = opened.size();
    EXPECT_EQ(gnutls_aead_cipher_decrypt(theirs.handle, header->nonce.data(), header->nonce.size(),
                                         ad.data(), ad.size(), formats::kTagBytes,
                                         s->data() + formats::kSealHeader, header->sealedSize,
                                         opened.data(), &length),
              0);
    EXPECT_EQ(length, frame.size());
    EXPECT_TRUE(opened == frame);

    // GnuTLS seals, under the format's header; ours opens, and refuses it at another index.
    std::vector<std::byte> frame2 = randomBytes(4096, 4);
    std::vector<std::byte> theirsSealed(formats::kSealHeader + frame2.size() + formats::kTagBytes);
    const char magic[4] = {'A', 'G', 'S', 'F'};
    memcpy(theirsSealed.data(), magic, 4);
    theirsSealed[4] = std::byte{1};
    theirsSealed[5] = static_cast<std::byte>(GetParam().cipher);
    uint32_t sealedSize = static_cast<uint32_t>(frame2.size() + formats::kTagBytes);
    for (size_t i = 0; i < 4; ++i)
        theirsSealed[8 + i] = static_cast<std::byte>((sealedSize >> (8 * i)) & 0xff);
    for (size_t i = 0; i < formats::kNonceBytes; ++i)
        theirsSealed[12 + i] = static_cast<std::byte>(0x30 + i);
    size_t written = sealedSize;
    ASSERT_EQ(gnutls_aead_cipher_encrypt(theirs.handle, theirsSealed.data() + 12,
                                         formats::kNonceBytes, ad.data(), ad.size(),
                                         formats::kTagBytes, frame2.data(), frame2.size(),
                                         theirsSealed.data() + formats::kSealHeader, &written),
              0);
    std::vector<std::byte> back(frame2.size());
    auto o = (*aead)->open(place, theirsSealed, back);
    ASSERT_TRUE(o.ok()) << o.error().describe();
    EXPECT_EQ(*o, frame2.size());
    EXPECT_TRUE(back == frame2);
    formats::FramePlace moved = place;
    moved.index = 2;
    auto refused = (*aead)->open(moved, theirsSealed, back);
    ASSERT_FALSE(refused.ok());
    EXPECT_THAT(refused.error().describe(), ::testing::HasSubstr("does not authenticate"));
    EXPECT_TRUE(std::all_of(back.begin(), back.end(), [](std::byte b) {
        return b == std::byte{0};
    })) << "nothing of a frame that does not authenticate is left in the buffer";

    // Opened in two steps, as a packed file's reader opens a chunk stored raw straight into the
    // caller's buffer: the first bytes into `head`, the rest where the callback, shown them,
    // puts it (an empty span: right after them). Refused at another index, with zeros in both.
    const size_t kHead = formats::kFrameHeader;
    std::vector<std::byte> head(frame2.size()), rest(frame2.size() - kHead, std::byte{0xaa}), seen;
    auto toRest = [&](std::span<const std::byte> h, size_t n) {
        seen.assign(h.begin(), h.end());
        EXPECT_EQ(n, rest.size());
        return std::span<std::byte>(rest);
    };
    auto two = (*aead)->open(place, theirsSealed, head, kHead, toRest);
    ASSERT_TRUE(two.ok()) << two.error().describe();
    EXPECT_EQ(*two, frame2.size());
    EXPECT_TRUE(std::equal(seen.begin(), seen.end(), frame2.begin()) && seen.size() == kHead);
    EXPECT_TRUE(std::equal(head.begin(), head.begin() + kHead, frame2.begin()));
    EXPECT_TRUE(std::equal(rest.begin(), rest.end(), frame2.begin() + kHead));
    std::vector<std::byte> inOne(frame2.size());
    auto here =
        (*aead)->open(place, theirsSealed, inOne, kHead,
                      [](std::span<const std::byte>, size_t) { return std::span<std::byte>(); });
    ASSERT_TRUE(here.ok()) << here.error().describe();
    EXPECT_TRUE(inOne == frame2);
    auto refusedTwo = (*aead)->open(moved, theirsSealed, head, kHead, toRest);
    ASSERT_FALSE(refusedTwo.ok());
    auto zero = [](std::byte b) { return b == std::byte{0}; };
    EXPECT_TRUE(std::all_of(head.begin(), head.begin() + kHead, zero) &&
                std::all_of(rest.begin(), rest.end(), zero))
        << "nothing of a frame that does not authenticate is left in either place";
}

INSTANTIATE_TEST_SUITE_P(
    BothCiphers, SealedInterop,
    ::testing::Values(Case{formats::Cipher::Aes256Gcm, GNUTLS_CIPHER_AES_256_GCM},
                      Case{formats::Cipher::Chacha20Poly1305, GNUTLS_CIPHER_CHACHA20_POLY1305}));

} // namespace
