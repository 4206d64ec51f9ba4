// The formats of encrypted checkpoints (formats/content_cipher.h, formats/seal_image.h), by the
// first byte of the input: 0, the key image: decoded, and what decodes re-encodes to the same
// bytes; 1, a sealed frame opened under a fixed key, which must fail unless it authenticates (a
// forged frame that opens aborts) and, when it does, decodes as a chunk frame; 2, the rest of the
// input sealed as a frame for one place, opened back to the same bytes, and refused after any one
// byte of it is flipped, or for another frame index, file or frame count.
#include "fuzz_target.h"

#include "formats/chunk_codec.h"
#include "formats/content_cipher.h"
#include "formats/seal_image.h"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kRoom = 1 << 20;

std::span<const std::byte> bytesOf(std::string_view s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

formats::Aead& fixedAead() {
    static std::unique_ptr<formats::Aead> aead = [] {
        formats::MasterKey master{};
        master[0] = std::byte{42};
        formats::CheckpointId id{};
        auto keys = formats::SealKeys::derive(formats::Cipher::Aes256Gcm, master, id);
        if (!keys.ok())
            abort();
        auto made = formats::Aead::make(*keys);
        if (!made.ok())
            abort();
        return std::move(made).value();
    }();
    return *aead;
}

void keyImage(std::string_view bytes) {
    auto image = formats::decodeSealImage(bytes, "fuzz.img");
    if (image.ok() && formats::encodeSealImage(*image) != bytes)
        abort();
}

void openFrame(std::string_view bytes) {
    static std::vector<std::byte> inner(formats::maxFrameSize(kRoom)), raw(kRoom);
    (void)formats::readSealHeader(bytesOf(bytes),
                                  formats::maxSealedFrame(formats::maxFrameSize(kRoom)));
    formats::FramePlace place{"amdgpu-packed-x.img", kRoom, 0, 1};
    auto opened = fixedAead().open(place, bytesOf(bytes), inner);
    if (opened.ok())
        abort(); // a frame nobody sealed authenticated
}

void roundTrip(std::string_view bytes) {
    static std::vector<std::byte> sealed(formats::maxSealedFrame(kRoom)), back(kRoom);
    if (bytes.size() > kRoom)
        return;
    formats::FramePlace place{"amdgpu-packed-x.img", bytes.size(), 3, 7};
    auto s = fixedAead().seal(place, bytesOf(bytes), sealed);
    if (!s.ok())
        abort();
    std::vector<std::byte> frame(s->begin(), s->end());
    auto n = fixedAead().open(place, frame, back);
    if (!n.ok() || *n != bytes.size() || (*n && memcmp(back.data(), bytes.data(), *n) != 0))
        abort();
    for (auto other : {formats::FramePlace{place.file, place.rawSize, 4, 7},
                       formats::FramePlace{"amdgpu-packed-y.img", place.rawSize, 3, 7},
                       formats::FramePlace{place.file, place.rawSize, 3, 8},
                       formats::FramePlace{place.file, place.rawSize + 1, 3, 7}})
        if (fixedAead().open(other, frame, back).ok())
            abort();
    size_t at = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]) * 131 % frame.size();
    frame[at] ^= std::byte{1};
    if (fixedAead().open(place, frame, back).ok())
        abort();
}

std::string withMode(char mode, const std::string& rest) {
    return std::string(1, mode) + rest;
}

} // namespace

void fuzzOne(std::string_view input) {
    if (input.empty())
        return;
    std::string_view rest = input.substr(1);
    switch (static_cast<unsigned char>(input[0]) % 3) {
    case 0:
        keyImage(rest);
        break;
    case 1:
        openFrame(rest);
        break;
    default:
        roundTrip(rest);
        break;
    }
}

std::vector<std::string> fuzzSeeds() {
    formats::SealImage image;
    image.cipher = formats::Cipher::Chacha20Poly1305;
    image.id[0] = std::byte{1};
    image.certificate[5] = std::byte{2};
    image.keyId[7] = std::byte{3};
    image.check[9] = std::byte{4};
    image.wrapped.assign(256, std::byte{0x5a});
    std::string header = "AGSF";
    header += std::string("\x01\x01\x00\x00", 4);
    header += std::string("\x30\x00\x00\x00", 4); // sealed size 48
    header += std::string(12, '\x07');            // nonce
    return {
        withMode(0, formats::encodeSealImage(image)),
        withMode(1, header + std::string(48, '\x11')),
        withMode(2, "AGCF tensor weight bias layer"),
        withMode(2, ""),
    };
}
