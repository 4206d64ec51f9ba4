#pragma once
/// \file
/// A frame's scratch buffer (packed_image.cpp, write_behind.cpp). Internal to formats/src.

#include <cstddef>
#include <memory>
#include <new>
#include <span>

namespace hal {

/// Where a ScratchBuffer starts: a page, so that its bytes can be written without the page
/// cache (O_DIRECT, ImageWriter::writeDirect).
constexpr size_t kScratchAlign = 4096;

/// Bytes whose contents start undefined, allocated when first asked for and kept: a
/// std::vector would write zeros over the whole of it first, touching every page of a buffer
/// that a frame stored raw uses only the first bytes of, once per contents file. Starts on a
/// page (kScratchAlign).
class ScratchBuffer {
public:
    /// The buffer, grown to at least `n` bytes (what it held is then lost).
    std::span<std::byte> atLeast(size_t n) {
        if (size_ < n) {
            data_.reset(new (std::align_val_t{kScratchAlign}) std::byte[n]);
            size_ = n;
        }
        return {data_.get(), size_};
    }
    std::span<std::byte> bytes() const { return {data_.get(), size_}; }

private:
    struct AlignedDelete {
        void operator()(std::byte* p) const {
            ::operator delete[](p, std::align_val_t{kScratchAlign});
        }
    };
    std::unique_ptr<std::byte[], AlignedDelete> data_;
    size_t size_ = 0;
};

} // namespace hal
