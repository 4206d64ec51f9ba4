#pragma once
/// \file
/// The pieces content lanes (datapath/content_pipeline.h) are made of: the device ends of a BO's
/// contents, the bounded staging buffer they pass through, and FNV-1a 64 (the checksum of images
/// of earlier versions).

#include "base/result.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace content {

using base::Result;

/// FNV-1a 64-bit digest, streamed.
class Fnv1a64 {
public:
    void update(std::span<const std::byte> data);
    uint64_t value() const { return hash_; }

private:
    uint64_t hash_ = 0xcbf29ce484222325ull;
};

/// A host buffer of bounded capacity, allocated once and reused for every chunk. Each buffer is
/// its own memory (per-GPU threads each use one at once): when even one page cannot be mapped,
/// it falls back to a page inside the object itself, never to memory shared with other buffers.
class StagingBuffer {
public:
    /// Capacity in bytes (at least 4 KiB; rounded up to a page).
    explicit StagingBuffer(uint64_t capacity);
    ~StagingBuffer();
    StagingBuffer(const StagingBuffer&) = delete;
    StagingBuffer& operator=(const StagingBuffer&) = delete;

    std::span<std::byte> span() { return {data_, capacity_}; }
    uint64_t capacity() const { return capacity_; }

private:
    std::byte* data_;
    uint64_t capacity_;
    bool mapped_ = true;
    alignas(4096) std::array<std::byte, 4096> fallback_;
};

/// Reads a buffer object's contents from a device, a chunk at a time.
class ContentSource {
public:
    virtual ~ContentSource() = default;
    /// Fills `out` with the bytes at [offset, offset + out.size()) of the object.
    virtual Result<void> read(uint64_t offset, std::span<std::byte> out) = 0;
};

/// Writes a buffer object's contents to a device, a chunk at a time.
class ContentSink {
public:
    virtual ~ContentSink() = default;
    /// Stores `in` at [offset, offset + in.size()) of the object.
    virtual Result<void> write(uint64_t offset, std::span<const std::byte> in) = 0;
};

} // namespace content
