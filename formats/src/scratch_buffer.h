#pragma once
/// \file
/// A frame's scratch buffer (packed_image.cpp, write_behind.cpp). Internal to formats/src.

#include <cstddef>
#include <memory>
#include <span>

namespace hal {

/// Bytes whose contents start undefined, allocated when first asked for and kept: a
/// std::vector would write zeros over the whole of it first, touching every page of a buffer
/// that a frame stored raw uses only the first bytes of, once per contents file.
class ScratchBuffer {
public:
    /// The buffer, grown to at least `n` bytes (what it held is then lost).
    std::span<std::byte> atLeast(size_t n) {
        if (size_ < n) {
            data_ = std::make_unique_for_overwrite<std::byte[]>(n);
            size_ = n;
        }
        return {data_.get(), size_};
    }
    std::span<std::byte> bytes() const { return {data_.get(), size_}; }

private:
    std::unique_ptr<std::byte[]> data_;
    size_t size_ = 0;
};

} // namespace hal
