#pragma once
/// \file
/// A frame's scratch buffer (packed_image.cpp, write_behind.cpp). Internal to formats/src.

#include <cstddef>
#include <memory>
#include <new>
#include <span>

namespace hal {

/// What the buffers written without the page cache start on (O_DIRECT,
/// ImageWriter::writeDirect): a page.
constexpr size_t kScratchAlign = 4096;

/// Bytes whose contents start undefined, allocated when first asked for and kept: a
/// std::vector would write zeros over the whole of it first, touching every page of a buffer
/// that a frame stored raw uses only the first bytes of, once per contents file. Only the
/// buffers written past the page cache (write_behind.h) ask to start on a page; the others
/// (a restore's) stay plain allocations, as they were before anything was aligned.
class ScratchBuffer {
public:
    /// `align`: where the buffer starts, a power of two; 0 for malloc's own alignment.
    explicit ScratchBuffer(size_t align = 0) : data_(nullptr, Free{align}) {}

    /// The buffer, grown to at least `n` bytes (what it held is then lost).
    std::span<std::byte> atLeast(size_t n) {
        if (size_ < n) {
            size_t align = data_.get_deleter().align;
            data_.reset(align ? new (std::align_val_t{align}) std::byte[n] : new std::byte[n]);
            size_ = n;
        }
        return {data_.get(), size_};
    }
    std::span<std::byte> bytes() const { return {data_.get(), size_}; }

private:
    struct Free {
        size_t align;
        void operator()(std::byte* p) const {
            if (align)
                ::operator delete[](p, std::align_val_t{align});
            else
                delete[] p;
        }
    };
    std::unique_ptr<std::byte[], Free> data_;
    size_t size_ = 0;
};

} // namespace hal
