#include "formats/chunk_codec.h"

#include "codec_libraries.h"
#include "little_endian.h"

#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>

namespace formats {

using base::Error;
using base::ErrorCode;
using base::makeError;
using base::Result;
using base::strFormat;
using base::success;

namespace {

constexpr char kMagic[4] = {'A', 'G', 'C', 'F'};
constexpr uint8_t kVersion = 1;
/// The samples of the probe, and the smallest chunk that is probed.
constexpr size_t kProbeSample = 16 << 10;
constexpr size_t kProbeSamples = 3;

using le::get;
using le::put;

Error badFrame(const std::string& what) {
    return makeError(ErrorCode::Image, "chunk frame: %s", what.c_str());
}

struct ZstdContexts {
    std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> compress{ZSTD_createCCtx(), ZSTD_freeCCtx};
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> decompress{ZSTD_createDCtx(), ZSTD_freeDCtx};
};

/// One pair per thread: each lane encodes or decodes its own chunks.
ZstdContexts& zstdContexts() {
    thread_local ZstdContexts contexts;
    return contexts;
}

/// The most bytes a compressed form of `rawSize` bytes may take to be kept: at least 1/64 and at
/// least one byte smaller.
size_t keepLimit(size_t rawSize) {
    size_t saving = std::max<size_t>(rawSize / 64, 1);
    return rawSize > saving ? rawSize - saving : 0;
}

/// Compresses `raw` into `out` (at most `capacity` bytes); 0 when it does not fit or fails.
size_t compressInto(const CodecSpec& spec, std::span<const std::byte> raw, std::byte* out,
                    size_t capacity) {
    if (capacity == 0)
        return 0;
    if (spec.codec == Codec::Lz4) {
        int n =
            LZ4_compress_default(reinterpret_cast<const char*>(raw.data()),
                                 reinterpret_cast<char*>(out), static_cast<int>(raw.size()),
                                 static_cast<int>(std::min<size_t>(capacity, LZ4_MAX_INPUT_SIZE)));
        return n > 0 ? static_cast<size_t>(n) : 0;
    }
    ZSTD_CCtx* cctx = zstdContexts().compress.get();
    if (!cctx)
        return 0;
    size_t n = ZSTD_compressCCtx(cctx, out, capacity, raw.data(), raw.size(), spec.level);
    return ZSTD_isError(n) ? 0 : n;
}

/// The probe: whether one of the samples of `raw` shrinks enough to try the whole chunk. zstd
/// probes at its fastest level whatever the level asked: the question is whether the bytes
/// compress at all, and a high level would make the probe cost more than the rest on data that
/// does not.
bool samplesCompress(const CodecSpec& asked, std::span<const std::byte> raw, std::byte* scratch) {
    if (raw.size() <= kProbeSamples * kProbeSample)
        return true;
    CodecSpec spec = asked.codec == Codec::Zstd ? CodecSpec{Codec::Zstd, kMinZstdLevel} : asked;
    const size_t starts[kProbeSamples] = {0, raw.size() / 2 - kProbeSample / 2,
                                          raw.size() - kProbeSample};
    for (size_t start : starts)
        if (compressInto(spec, raw.subspan(start, kProbeSample), scratch, keepLimit(kProbeSample)))
            return true;
    return false;
}

void putHeader(std::byte* out, Codec codec, size_t rawSize, size_t storedSize) {
    memcpy(out, kMagic, sizeof kMagic);
    put<uint8_t>(out + 4, kVersion);
    put<uint8_t>(out + 5, static_cast<uint8_t>(codec));
    put<uint16_t>(out + 6, 0);
    put<uint32_t>(out + 8, static_cast<uint32_t>(rawSize));
    put<uint32_t>(out + 12, static_cast<uint32_t>(storedSize));
}

Result<void> decodeStored(const FrameHeader& h, std::span<const std::byte> stored,
                          std::span<std::byte> out) {
    HAL_TRY(requireCodecLibrary(h.codec, "a compressed checkpoint (content-compression)"));
    switch (h.codec) {
    case Codec::None: // served from the frame itself (decodeChunkInPlace)
        break;
    case Codec::Lz4: {
        int n = LZ4_decompress_safe(reinterpret_cast<const char*>(stored.data()),
                                    reinterpret_cast<char*>(out.data()),
                                    static_cast<int>(stored.size()), static_cast<int>(h.rawSize));
        if (n < 0)
            return badFrame("its lz4 block is malformed");
        if (static_cast<uint32_t>(n) != h.rawSize)
            return badFrame(
                strFormat("its lz4 block holds %d bytes, its raw size says %u", n, h.rawSize));
        return success();
    }
    case Codec::Zstd: {
        size_t length = ZSTD_findFrameCompressedSize(stored.data(), stored.size());
        if (ZSTD_isError(length) || length != stored.size())
            return badFrame(strFormat("its stored bytes are not exactly one zstd frame (%s)",
                                      ZSTD_isError(length) ? ZSTD_getErrorName(length)
                                                           : "bytes after the frame"));
        unsigned long long content = ZSTD_getFrameContentSize(stored.data(), stored.size());
        if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != h.rawSize)
            return badFrame(strFormat("its zstd frame records %llu bytes, its raw size says %u",
                                      content, h.rawSize));
        ZSTD_DCtx* dctx = zstdContexts().decompress.get();
        if (!dctx)
            return makeError(ErrorCode::OutOfMemory, "chunk frame: no zstd decompression context");
        size_t n = ZSTD_decompressDCtx(dctx, out.data(), h.rawSize, stored.data(), stored.size());
        if (ZSTD_isError(n))
            return badFrame(strFormat("its zstd frame does not decode (%s)", ZSTD_getErrorName(n)));
        if (n != h.rawSize)
            return badFrame(
                strFormat("its zstd frame holds %zu bytes, its raw size says %u", n, h.rawSize));
        return success();
    }
    }
    return makeError(ErrorCode::Internal, "chunk frame: codec %u", static_cast<unsigned>(h.codec));
}

} // namespace

const char* codecName(Codec codec) {
    switch (codec) {
    case Codec::None:
        return "none";
    case Codec::Lz4:
        return "lz4";
    case Codec::Zstd:
        return "zstd";
    }
    return "?";
}

std::string CodecSpec::describe() const {
    if (codec == Codec::Zstd)
        return strFormat("zstd:%d", level);
    return codecName(codec);
}

Result<CodecSpec> parseCodec(std::string_view text) {
    if (text == "none")
        return CodecSpec{};
    if (text == "lz4")
        return CodecSpec{Codec::Lz4, 0};
    if (text == "zstd")
        return CodecSpec{Codec::Zstd, kDefaultZstdLevel};
    std::string_view prefix = "zstd:";
    if (text.substr(0, prefix.size()) == prefix) {
        std::string_view digits = text.substr(prefix.size());
        int level = 0;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), level);
        bool number = !digits.empty() && digits[0] != '-' && digits[0] != '+' &&
                      ec == std::errc() && end == digits.data() + digits.size();
        if (number && level >= kMinZstdLevel && level <= kMaxZstdLevel)
            return CodecSpec{Codec::Zstd, level};
        return makeError(
            ErrorCode::Config,
            "content-compression: '%.*s' has no zstd level from %d to %d (accepted: %s)",
            static_cast<int>(text.size()), text.data(), kMinZstdLevel, kMaxZstdLevel, kCodecForms);
    }
    return makeError(ErrorCode::Config, "content-compression: '%.*s' is not a codec (accepted: %s)",
                     static_cast<int>(text.size()), text.data(), kCodecForms);
}

Result<FrameHeader> readFrameHeader(std::span<const std::byte> bytes) {
    if (bytes.size() < kFrameHeader)
        return badFrame(
            strFormat("%zu bytes, shorter than its %zu-byte header", bytes.size(), kFrameHeader));
    if (memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return badFrame("its magic is not \"AGCF\"");
    uint8_t version = get<uint8_t>(bytes.data() + 4);
    if (version != kVersion)
        return badFrame(strFormat("version %u, this build reads version %u", version, kVersion));
    uint8_t codec = get<uint8_t>(bytes.data() + 5);
    if (codec > static_cast<uint8_t>(Codec::Zstd))
        return badFrame(strFormat("codec %u (0: stored raw, 1: lz4, 2: zstd)", codec));
    uint16_t flags = get<uint16_t>(bytes.data() + 6);
    if (flags != 0)
        return badFrame(strFormat("flags 0x%x, none are defined", flags));
    FrameHeader h{static_cast<Codec>(codec), get<uint32_t>(bytes.data() + 8),
                  get<uint32_t>(bytes.data() + 12)};
    if (h.rawSize > kMaxFrameRaw)
        return badFrame(strFormat("raw size %u is over the largest chunk, %llu", h.rawSize,
                                  static_cast<unsigned long long>(kMaxFrameRaw)));
    if (h.codec == Codec::None && h.storedSize != h.rawSize)
        return badFrame(strFormat("stored size %u of a raw chunk is not its raw size %u",
                                  h.storedSize, h.rawSize));
    if (h.codec != Codec::None && (h.storedSize == 0 || h.storedSize >= h.rawSize))
        return badFrame(strFormat("stored size %u of a %s chunk is not from 1 to its raw size %u "
                                  "less one",
                                  h.storedSize, codecName(h.codec), h.rawSize));
    return h;
}

Result<FrameParts> encodeChunkParts(const CodecSpec& spec, std::span<const std::byte> raw,
                                    std::span<std::byte> out) {
    if (raw.size() > kMaxFrameRaw)
        return makeError(ErrorCode::InvalidArgument,
                         "a chunk of %zu bytes is over the largest a "
                         "frame holds, %llu",
                         raw.size(), static_cast<unsigned long long>(kMaxFrameRaw));
    if (out.size() < maxFrameSize(raw.size()))
        return makeError(ErrorCode::InvalidArgument,
                         "a frame buffer of %zu bytes for a chunk of %zu (it needs %zu)",
                         out.size(), raw.size(), maxFrameSize(raw.size()));
    HAL_TRY(requireCodecLibrary(spec.codec, "content-compression"));
    std::byte* body = out.data() + kFrameHeader;
    size_t stored = 0;
    if (spec.codec != Codec::None && samplesCompress(spec, raw, body))
        stored = compressInto(spec, raw, body, keepLimit(raw.size()));
    if (!stored) {
        putHeader(out.data(), Codec::None, raw.size(), raw.size());
        return FrameParts{out.first(kFrameHeader), raw};
    }
    putHeader(out.data(), spec.codec, raw.size(), stored);
    return FrameParts{out.first(kFrameHeader), out.subspan(kFrameHeader, stored)};
}

Result<std::span<const std::byte>>
encodeChunk(const CodecSpec& spec, std::span<const std::byte> raw, std::span<std::byte> out) {
    HAL_TRY_ASSIGN(FrameParts parts, encodeChunkParts(spec, raw, out));
    if (parts.body.data() != out.data() + kFrameHeader && !parts.body.empty())
        memcpy(out.data() + kFrameHeader, parts.body.data(), parts.body.size());
    return std::span<const std::byte>(out.first(kFrameHeader + parts.body.size()));
}

Result<std::span<const std::byte>> decodeChunkInPlace(std::span<const std::byte> frame,
                                                      std::span<std::byte> out) {
    HAL_TRY_ASSIGN(FrameHeader h, readFrameHeader(frame));
    if (frame.size() != h.frameSize())
        return badFrame(strFormat("stored size %u, and %zu bytes follow its header", h.storedSize,
                                  frame.size() - kFrameHeader));
    if (h.codec == Codec::None)
        return frame.subspan(kFrameHeader, h.rawSize);
    if (h.rawSize > out.size())
        return badFrame(strFormat("raw size %u is over the %zu bytes the chunk has room for",
                                  h.rawSize, out.size()));
    HAL_TRY(decodeStored(h, frame.subspan(kFrameHeader), out));
    return std::span<const std::byte>(out.first(h.rawSize));
}

Result<size_t> decodeChunk(std::span<const std::byte> frame, std::span<std::byte> out) {
    HAL_TRY_ASSIGN(std::span<const std::byte> raw, decodeChunkInPlace(frame, out));
    if (raw.size() > out.size()) // a raw frame, served from itself: it must fit `out` too
        return badFrame(strFormat("raw size %zu is over the %zu bytes the chunk has room for",
                                  raw.size(), out.size()));
    if (raw.data() != out.data() && !raw.empty())
        memcpy(out.data(), raw.data(), raw.size());
    return raw.size();
}

} // namespace formats
