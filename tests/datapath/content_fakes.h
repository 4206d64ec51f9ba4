#pragma once
/// \file
/// In-memory and procedural ContentSource/ContentSink/ImageWriter/ImageReader for content
/// streaming tests. Procedural ones never hold the content: byte i is patternByte(i).

#include "content/stream.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace haltest {

/// The content byte at `offset`: not periodic at any power-of-two chunk size.
inline std::byte patternByte(uint64_t offset) {
    return static_cast<std::byte>((offset * 131 + (offset >> 9) * 7 + (offset >> 17)) & 0xff);
}

/// A device that produces patternByte(i), records the largest chunk asked for and checks that
/// chunks are asked in order without gaps.
class PatternSource : public content::ContentSource {
public:
    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        if (offset != next_)
            return base::makeError(base::ErrorCode::Internal, "asked %llu, expected %llu",
                                   static_cast<unsigned long long>(offset),
                                   static_cast<unsigned long long>(next_));
        if (failAt_ && offset <= *failAt_ && *failAt_ < offset + out.size())
            return base::makeErrnoError(base::ErrorCode::Kernel, EIO, "SDMA read failed");
        for (size_t i = 0; i < out.size(); ++i)
            out[i] = patternByte(offset + i);
        next_ = offset + out.size();
        maxChunk_ = std::max<uint64_t>(maxChunk_, out.size());
        ++calls_;
        return base::success();
    }
    void failAt(uint64_t offset) { failAt_ = offset; }
    uint64_t maxChunk() const { return maxChunk_; }
    uint64_t calls() const { return calls_; }

private:
    uint64_t next_ = 0;
    uint64_t maxChunk_ = 0;
    uint64_t calls_ = 0;
    std::optional<uint64_t> failAt_;
};

/// A device that checks every written byte against patternByte(i) without keeping any.
class PatternCheckSink : public content::ContentSink {
public:
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        if (failAt_ && offset <= *failAt_ && *failAt_ < offset + in.size())
            return base::makeErrnoError(base::ErrorCode::Kernel, EFAULT, "SDMA write failed");
        if (offset != next_)
            ++mismatches_;
        for (size_t i = 0; i < in.size(); ++i)
            if (in[i] != patternByte(offset + i))
                ++mismatches_;
        next_ = offset + in.size();
        maxChunk_ = std::max<uint64_t>(maxChunk_, in.size());
        return base::success();
    }
    void failAt(uint64_t offset) { failAt_ = offset; }
    uint64_t received() const { return next_; }
    uint64_t mismatches() const { return mismatches_; }
    uint64_t maxChunk() const { return maxChunk_; }

private:
    uint64_t next_ = 0;
    uint64_t mismatches_ = 0;
    uint64_t maxChunk_ = 0;
    std::optional<uint64_t> failAt_;
};

/// An image writer into memory.
class MemoryWriter : public formats::ImageWriter {
public:
    base::Result<void> write(std::span<const std::byte> data) override {
        if (failAfter_ && bytes.size() + data.size() > *failAfter_)
            return base::makeErrnoError(base::ErrorCode::Io, ENOSPC, "writing image test.img");
        bytes.insert(bytes.end(), data.begin(), data.end());
        return base::success();
    }
    base::Result<void> close() override { return base::success(); }
    uint64_t written() const override { return bytes.size(); }
    void failAfter(uint64_t n) { failAfter_ = n; }
    std::vector<std::byte> bytes;

private:
    std::optional<uint64_t> failAfter_;
};

/// An image writer that keeps nothing but a count and a digest.
class CountingWriter : public formats::ImageWriter {
public:
    base::Result<void> write(std::span<const std::byte> data) override {
        count_ += data.size();
        digest_.update(data);
        return base::success();
    }
    base::Result<void> close() override { return base::success(); }
    uint64_t written() const override { return count_; }
    uint64_t digest() const { return digest_.value(); }

private:
    uint64_t count_ = 0;
    content::Fnv1a64 digest_;
};

/// An image reader over memory, recording the largest read.
class MemoryReader : public formats::ImageReader {
public:
    explicit MemoryReader(std::vector<std::byte> data) : data_(std::move(data)) {}
    base::Result<void> readExact(std::span<std::byte> out) override {
        if (pos_ + out.size() > data_.size())
            return base::makeError(base::ErrorCode::Image, "image %s is truncated", name_.c_str());
        std::copy_n(data_.begin() + static_cast<ptrdiff_t>(pos_), out.size(), out.begin());
        pos_ += out.size();
        maxChunk_ = std::max<uint64_t>(maxChunk_, out.size());
        return base::success();
    }
    int64_t size() const override { return static_cast<int64_t>(data_.size()); }
    const std::string& name() const override { return name_; }
    uint64_t maxChunk() const { return maxChunk_; }

private:
    std::vector<std::byte> data_;
    size_t pos_ = 0;
    uint64_t maxChunk_ = 0;
    std::string name_ = "test.img";
};

/// An image reader that generates patternByte(i) for `size` bytes without holding them.
class PatternReader : public formats::ImageReader {
public:
    explicit PatternReader(uint64_t size) : size_(size) {}
    base::Result<void> readExact(std::span<std::byte> out) override {
        if (pos_ + out.size() > size_)
            return base::makeError(base::ErrorCode::Image, "image %s is truncated", name_.c_str());
        for (size_t i = 0; i < out.size(); ++i)
            out[i] = patternByte(pos_ + i);
        pos_ += out.size();
        return base::success();
    }
    int64_t size() const override { return static_cast<int64_t>(size_); }
    const std::string& name() const override { return name_; }

private:
    uint64_t size_;
    uint64_t pos_ = 0;
    std::string name_ = "pattern.img";
};

/// A BO in host memory: the lane reads it at dump and writes it at restore.
class MemoryBo : public content::ContentSource, public content::ContentSink {
public:
    explicit MemoryBo(std::vector<std::byte> bytes) : bytes(std::move(bytes)) {}
    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        std::copy_n(bytes.begin() + static_cast<ptrdiff_t>(offset), out.size(), out.begin());
        return base::success();
    }
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        std::copy(in.begin(), in.end(), bytes.begin() + static_cast<ptrdiff_t>(offset));
        return base::success();
    }
    std::vector<std::byte> bytes;
};

/// The pattern's first `size` bytes.
inline std::vector<std::byte> patternBytes(uint64_t size) {
    std::vector<std::byte> v(size);
    for (uint64_t i = 0; i < size; ++i)
        v[i] = patternByte(i);
    return v;
}

} // namespace haltest
