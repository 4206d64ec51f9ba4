#pragma once
/// \file
/// Checksums of BO contents. New images carry XXH3-64 (xxHash, from Debian's libxxhash): it runs
/// at about the speed of memcpy, so it costs nothing next to the copy (`bench.content_hash`
/// measures it against FNV-1a and memcpy). Images of earlier versions of this project carry
/// FNV-1a 64, which is still verified, byte by byte and about ten times slower.

#include "base/result.h"
#include "content/stream.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace content {

using base::Result;

/// The algorithm of a recorded checksum.
enum class DigestKind {
    Xxh3_64, ///< XXH3 64-bit, seed 0: what this version writes
    Fnv1a64, ///< FNV-1a 64: what earlier versions wrote (still verified)
};

/// "XXH3-64" or "FNV-1a 64", for messages.
const char* digestName(DigestKind kind);

/// A checksum recorded in an image: its algorithm and value.
struct ContentChecksum {
    DigestKind kind = DigestKind::Xxh3_64;
    uint64_t value = 0;

    bool operator==(const ContentChecksum&) const = default;
};

/// A streamed digest of one kind: update() in order, value() at any time.
class ContentDigest {
public:
    explicit ContentDigest(DigestKind kind = DigestKind::Xxh3_64);
    ~ContentDigest();
    ContentDigest(ContentDigest&&) noexcept;
    ContentDigest& operator=(ContentDigest&&) noexcept;

    void update(std::span<const std::byte> data);
    /// The digest of everything given so far.
    uint64_t value() const;
    DigestKind kind() const { return kind_; }
    /// value() with its kind.
    ContentChecksum checksum() const { return {kind_, value()}; }

private:
    struct Xxh3State;
    DigestKind kind_;
    Fnv1a64 fnv_;
    std::unique_ptr<Xxh3State> xxh3_;
};

/// The XXH3-64 of `data` in one call.
uint64_t xxh3Of(std::span<const std::byte> data);

/// An Image error naming `image` when `got` is not `want`: the image is corrupt.
Result<void> verifyChecksum(const std::string& image, const ContentChecksum& want, uint64_t got);

} // namespace content
