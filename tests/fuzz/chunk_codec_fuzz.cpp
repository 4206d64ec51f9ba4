// The frame of one compressed chunk (formats/chunk_codec.h): decoded into a room of 1 MiB, and what
// decodes re-encodes, with each codec, to a frame that decodes to the same bytes; a raw frame
// re-encodes to itself.
#include "fuzz_target.h"

#include "formats/chunk_codec.h"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t kRoom = 1 << 20;

std::span<const std::byte> bytesOf(std::string_view s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

void appendU32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<char>(v >> (8 * i)));
}

/// A frame header and `stored`, for seeds written by hand (so they do not change with the
/// library versions that would compress them).
std::string frame(formats::Codec codec, uint32_t rawSize, const std::string& stored) {
    std::string f = "AGCF";
    f.push_back(1);
    f.push_back(static_cast<char>(codec));
    f.append(2, '\0');
    appendU32(f, rawSize);
    appendU32(f, static_cast<uint32_t>(stored.size()));
    return f + stored;
}

/// An LZ4 block of `size` (at least 6) bytes 'a': one literal, a match of offset 1, and the five
/// literals a block ends with.
std::string lz4Run(uint32_t size) {
    std::string b;
    uint32_t extra = size - 1 - 5 - 4; // the match length beyond 4
    b.push_back(static_cast<char>(0x10 | (extra >= 15 ? 15 : extra)));
    b.push_back('a');
    b.push_back(1);
    b.push_back(0);
    if (extra >= 15) {
        uint32_t rest = extra - 15;
        for (; rest >= 255; rest -= 255)
            b.push_back(static_cast<char>(255));
        b.push_back(static_cast<char>(rest));
    }
    b.push_back(0x50);
    b.append(5, 'a');
    return b;
}

/// A zstd frame of `size` (256 to 65791) bytes 'z': a single segment with a 2-byte content size
/// and one RLE block.
std::string zstdRun(uint32_t size) {
    std::string f = {'\x28', '\xb5', '\x2f', '\xfd', '\x60'};
    f.push_back(static_cast<char>((size - 256) & 0xff));
    f.push_back(static_cast<char>((size - 256) >> 8));
    uint32_t block = 1 | (1 << 1) | (size << 3); // last, RLE, regenerated size
    for (int i = 0; i < 3; ++i)
        f.push_back(static_cast<char>(block >> (8 * i)));
    f.push_back('z');
    return f;
}

} // namespace

void fuzzOne(std::string_view input) {
    static std::vector<std::byte> raw(kRoom), out(formats::maxFrameSize(kRoom)), again(kRoom);
    auto n = formats::decodeChunk(bytesOf(input), raw);
    if (!n.ok())
        return;
    std::span<const std::byte> decoded(raw.data(), *n);
    auto header = formats::readFrameHeader(bytesOf(input));
    for (const char* codec : {"none", "lz4", "zstd:1"}) {
        auto spec = formats::parseCodec(codec);
        auto f = formats::encodeChunk(*spec, decoded, out);
        if (!f.ok())
            abort();
        if (header->codec == formats::Codec::None && spec->codec == formats::Codec::None &&
            (f->size() != input.size() || memcmp(f->data(), input.data(), input.size()) != 0))
            abort();
        auto m = formats::decodeChunk(*f, again);
        if (!m.ok() || *m != *n || (*n && memcmp(again.data(), decoded.data(), *n) != 0))
            abort();
    }
}

std::vector<std::string> fuzzSeeds() {
    std::string text;
    while (text.size() < 300)
        text += "tensor weight bias layer ";
    return {
        frame(formats::Codec::None, 0, ""),
        frame(formats::Codec::None, static_cast<uint32_t>(text.size()), text),
        frame(formats::Codec::Lz4, 20, lz4Run(20)),
        frame(formats::Codec::Lz4, 4096, lz4Run(4096)),
        frame(formats::Codec::Zstd, 300, zstdRun(300)),
        frame(formats::Codec::Zstd, 4096, zstdRun(4096)),
    };
}
