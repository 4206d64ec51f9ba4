#pragma once
/// \file
/// Optional compression of BO contents (issue 23, item 2; option `content-compression`): each
/// chunk of a BO becomes one frame that decodes on its own, so the lanes of a dump compress
/// chunks while others are copied or written, and a restore decompresses chunks in parallel.
/// Detect and store: a chunk that does not shrink by at least 1/64 of its size (or that the codec
/// cannot encode) is stored raw, so incompressible data costs a memcpy and a probe, never a
/// larger file. The probe: before compressing a chunk of more than 3 x 32 KiB, three samples of
/// 32 KiB (its start, middle and end) are compressed (zstd at level 1 whatever the level asked,
/// so the probe stays cheap); when none of them shrinks by 1/64, the chunk is stored raw without
/// compressing the rest (a chunk whose samples do not compress but whose other bytes would is
/// then stored raw: a loss of ratio, never of data).
///
/// The frame format is ours alone (CRIU's own plugin never reads it), little-endian:
///   "AGCF" (4 bytes), version u8 (1), codec u8 (0: stored raw, 1: lz4, 2: zstd), flags u16
///   (0), raw size u32 (at most kMaxFrameRaw), stored size u32, then the stored bytes:
///   - codec 0: the raw bytes themselves (stored size = raw size);
///   - codec 1: one LZ4 block (the block format, no LZ4 frame header: the raw size is here);
///   - codec 2: one zstd frame, whose content size, when it records one, is the raw size.
///   A compressed frame is always smaller than its raw bytes (stored size < raw size), and an
///   empty chunk is stored raw. The zstd level is not recorded: decoding does not need it.
/// The frame holds no checksum: the lane checksums the raw bytes (XXH3 of the contents, and the
/// chunk record's XXH3-128 for incremental images), and that check runs after decoding, so a
/// damaged frame that still decodes is caught there.
/// decodeChunk checks every field and every length, and never trusts a size to allocate: it
/// writes into the caller's buffer only.

#include "base/result.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace formats {

using base::Result;

/// The codecs of a frame, with the values the frame records.
enum class Codec : uint8_t {
    None = 0, ///< stored raw
    Lz4 = 1,
    Zstd = 2,
};

/// The zstd levels `content-compression` accepts, and the one `zstd` alone means.
inline constexpr int kMinZstdLevel = 1;
inline constexpr int kMaxZstdLevel = 19;
inline constexpr int kDefaultZstdLevel = 3;

/// What `content-compression` asks for.
struct CodecSpec {
    Codec codec = Codec::None;
    int level = 0; ///< zstd: kMinZstdLevel..kMaxZstdLevel; 0 for the others
    bool operator==(const CodecSpec&) const = default;
    /// The canonical text: "none", "lz4", "zstd:LEVEL" (parseCodec reads it back).
    std::string describe() const;
};

/// The spellings parseCodec accepts, for messages and documentation.
inline constexpr const char* kCodecForms = "none, lz4, zstd, or zstd:LEVEL with LEVEL 1 to 19";

/// "none", "lz4", "zstd" (level 3) or "zstd:LEVEL" (1..19); a Config error naming the option
/// `content-compression`, the text and the accepted forms for anything else.
Result<CodecSpec> parseCodec(std::string_view text);

/// The length of a frame's header.
inline constexpr size_t kFrameHeader = 16;
/// The largest chunk a frame holds (1 GiB; a lane's chunks are a few MiB).
inline constexpr uint64_t kMaxFrameRaw = 1ull << 30;

/// The longest frame a chunk of `rawSize` bytes can become (the header and the raw bytes): the
/// size of the buffer encodeChunk needs.
constexpr size_t maxFrameSize(size_t rawSize) {
    return kFrameHeader + rawSize;
}

/// A frame's header, read and checked.
struct FrameHeader {
    Codec codec = Codec::None;
    uint32_t rawSize = 0;
    uint32_t storedSize = 0;
    /// The whole frame's length: the header and the stored bytes.
    size_t frameSize() const { return kFrameHeader + storedSize; }
};

/// The header at the start of `bytes` (at least kFrameHeader of them): an Image error naming the
/// field (magic, version, codec, flags, raw size, stored size) when one is wrong. It does not
/// look at the stored bytes; a reader of a file reads the header, then frameSize() bytes.
Result<FrameHeader> readFrameHeader(std::span<const std::byte> bytes);

/// Encodes `raw` (at most kMaxFrameRaw bytes) as one frame into `out`, which must hold
/// maxFrameSize(raw.size()) bytes; returns the frame, a prefix of `out`. Compressed with `spec`
/// when that saves at least 1/64 of the bytes, stored raw otherwise. An InvalidArgument error
/// when `raw` is too large or `out` too small.
Result<std::span<const std::byte>>
encodeChunk(const CodecSpec& spec, std::span<const std::byte> raw, std::span<std::byte> out);

/// A frame as two spans, written one after the other: its header, in the caller's buffer, and
/// its stored bytes.
struct FrameParts {
    std::span<const std::byte> header;
    std::span<const std::byte> body;
};

/// encodeChunk without copying a chunk that is stored raw: its body is then `raw` itself, and
/// only the header is written into `out` (the compressed bytes of a chunk that shrinks follow
/// the header there). What a writer uses when it can write the two parts as they are.
Result<FrameParts> encodeChunkParts(const CodecSpec& spec, std::span<const std::byte> raw,
                                    std::span<std::byte> out);

/// Decodes the frame `frame` (exactly one frame, nothing after it) into `out`; returns its raw
/// size. An Image error naming the field for a malformed header, a stored size that is not the
/// frame's length, a raw size larger than `out`, or stored bytes that do not decode to exactly
/// the raw size.
Result<size_t> decodeChunk(std::span<const std::byte> frame, std::span<std::byte> out);

/// decodeChunk without copying a frame that is stored raw: its raw bytes are then a span of
/// `frame` itself, and `out` is used (and its room checked) only for a compressed frame, whose
/// raw bytes are the returned prefix of `out`. The same checks and errors as decodeChunk.
Result<std::span<const std::byte>> decodeChunkInPlace(std::span<const std::byte> frame,
                                                      std::span<std::byte> out);

/// Name of a codec for messages ("none", "lz4", "zstd").
const char* codecName(Codec codec);

} // namespace formats
