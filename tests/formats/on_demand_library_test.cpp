// libcrypto is mapped only once a checkpoint is encrypted, signed or verified
// (formats/src/libcrypto_on_demand.h), lz4 and zstd once contents are compressed or decompressed
// (formats/src/codec_libraries.h). This binary links formats/ and none of them, and each test
// runs in a process of its own (a CTest entry per test), so /proc/self/maps shows what formats/
// itself loads.
#include "libcrypto_on_demand.h"

#include "formats/chunk_codec.h"
#include "formats/content_cipher.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <string>
#include <vector>

namespace {

/// Whether a library whose file name starts with `name` ("libcrypto.so") is mapped here.
bool mapped(const std::string& name) {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
        if (line.find("/" + name) != std::string::npos)
            return true;
    return false;
}

bool libcryptoMapped() {
    return mapped("libcrypto.so");
}

TEST(LibcryptoOnDemand, MappedOnlyWhenBoContentsAreFirstSealed) {
    ASSERT_FALSE(libcryptoMapped()) << "libcrypto is mapped before anything needed it";
    formats::MasterKey master{};
    formats::CheckpointId id{};
    for (size_t i = 0; i < master.size(); ++i)
        master[i] = static_cast<std::byte>(i * 5 + 3);
    // The keys are GnuTLS's: deriving them maps no libcrypto.
    auto keys = formats::SealKeys::derive(formats::Cipher::Chacha20Poly1305, master, id);
    ASSERT_TRUE(keys.ok()) << keys.error().describe();
    EXPECT_FALSE(libcryptoMapped());

    auto aead = formats::Aead::make(*keys);
    ASSERT_TRUE(aead.ok()) << aead.error().describe();
    EXPECT_TRUE(libcryptoMapped());
    // Through the forwards, a frame seals and opens, and one bit changed is refused.
    const formats::FramePlace place{"amdgpu-packed-kfd-bo-1.img", 1 << 20, 0, 1};
    std::vector<std::byte> frame(5000);
    for (size_t i = 0; i < frame.size(); ++i)
        frame[i] = static_cast<std::byte>(i * 31);
    std::vector<std::byte> sealed(formats::maxSealedFrame(frame.size()));
    auto s = (*aead)->seal(place, frame, sealed);
    ASSERT_TRUE(s.ok()) << s.error().describe();
    std::vector<std::byte> copy(s->begin(), s->end());
    std::vector<std::byte> back(frame.size());
    auto o = (*aead)->open(place, copy, back);
    ASSERT_TRUE(o.ok()) << o.error().describe();
    EXPECT_EQ(*o, frame.size());
    EXPECT_TRUE(back == frame);
    copy[formats::kSealHeader + 10] ^= std::byte{1};
    EXPECT_FALSE((*aead)->open(place, copy, back).ok());
}

/// probeLibcrypto(name, option) fails with a message holding `why` and the option.
void expectRefused(const char* name, const char* option, const std::string& why) {
    auto r = formats::probeLibcrypto(name, option);
    ASSERT_FALSE(r.ok()) << name;
    const std::string& m = r.error().message();
    EXPECT_NE(m.find(why), std::string::npos) << m;
    EXPECT_NE(m.find(option), std::string::npos) << m;
}

TEST(LibcryptoOnDemand, AMissingLibraryIsAnErrorNamingItAndTheOption) {
    expectRefused("libcrypto.so.0-not-installed", "content-encryption",
                  "libcrypto.so.0-not-installed");
}

TEST(LibcryptoOnDemand, ALibraryWithoutOpenSslsFunctionsIsRefused) {
    expectRefused("libz.so.1", "trusted-certificates", "no function BIO_ctrl");
}

TEST(LibcryptoOnDemand, TheInstalledLibraryHasEveryFunction) {
    auto r = formats::probeLibcrypto(formats::kLibcryptoName, "content-encryption");
    EXPECT_TRUE(r.ok()) << r.error().describe();
}

TEST(CodecLibrariesOnDemand, EachMappedOnlyWhenAChunkOfItsCodecIsFirstEncoded) {
    ASSERT_FALSE(mapped("liblz4.so")) << "lz4 is mapped before anything needed it";
    ASSERT_FALSE(mapped("libzstd.so")) << "zstd is mapped before anything needed it";
    std::vector<std::byte> raw(256 << 10);
    for (size_t i = 0; i < raw.size(); ++i)
        raw[i] = static_cast<std::byte>((i / 512) % 7);
    std::vector<std::byte> frame(formats::maxFrameSize(raw.size()));
    std::vector<std::byte> back(raw.size());
    // Stored raw, as every chunk of a dump without compression: neither is mapped.
    auto plain = formats::encodeChunk(formats::CodecSpec{}, raw, frame);
    ASSERT_TRUE(plain.ok()) << plain.error().describe();
    EXPECT_FALSE(mapped("liblz4.so") || mapped("libzstd.so"));

    for (formats::Codec codec : {formats::Codec::Lz4, formats::Codec::Zstd}) {
        formats::CodecSpec spec{codec,
                                codec == formats::Codec::Zstd ? formats::kDefaultZstdLevel : 0};
        auto framed = formats::encodeChunk(spec, raw, frame);
        ASSERT_TRUE(framed.ok()) << framed.error().describe();
        auto header = formats::readFrameHeader(*framed);
        ASSERT_TRUE(header.ok()) << header.error().describe();
        EXPECT_EQ(header->codec, codec) << "the chunk did not compress";
        auto decoded = formats::decodeChunk(*framed, back);
        ASSERT_TRUE(decoded.ok()) << decoded.error().describe();
        EXPECT_TRUE(back == raw);
    }
    EXPECT_TRUE(mapped("liblz4.so"));
    EXPECT_TRUE(mapped("libzstd.so"));
}

} // namespace
