#pragma once
/// \file
/// A frame's scratch buffer (packed_image.cpp, write_behind.cpp). Internal to formats/src.

#include <sys/mman.h>

#include <cstddef>
#include <memory>
#include <new>
#include <span>

namespace formats {

/// What the buffers written without the page cache start on (O_DIRECT,
/// ImageWriter::writeDirect): a page.
constexpr size_t kScratchAlign = 4096;
/// A transparent huge page: where a buffer written past the page cache of at least that many
/// bytes starts, so that its pages can be one huge page (MADV_HUGEPAGE) and a write of it reaches
/// the device as one request instead of several (a device takes so many pages per request: 254
/// on this project's machines, whose virtual disk writes fewer, larger requests faster).
constexpr size_t kHugePage = 2u << 20;

/// Bytes whose contents start undefined, allocated when first asked for and kept: a
/// std::vector would write zeros over the whole of it first, touching every page of a buffer
/// that a frame stored raw uses only the first bytes of, once per contents file. Only the
/// buffers written past the page cache (write_behind.h) ask to start on a page; the others
/// (a restore's) stay plain allocations, as they were before anything was aligned.
class ScratchBuffer {
public:
    /// `align`: where the buffer starts, a power of two; 0 for malloc's own alignment.
    explicit ScratchBuffer(size_t align = 0) : align_(align), data_(nullptr, Free{align}) {}

    /// The buffer, grown to at least `n` bytes (what it held is then lost).
    std::span<std::byte> atLeast(size_t n) {
        if (size_ < n) {
            data_.reset();
            bool huge = align_ == kScratchAlign && n >= kHugePage;
            size_t align = huge ? kHugePage : align_;
            data_.get_deleter().align = align;
            data_.reset(align ? new (std::align_val_t{align}) std::byte[n] : new std::byte[n]);
            if (huge) // advice: without transparent huge pages, small pages as before
                madvise(data_.get(), n, MADV_HUGEPAGE);
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
    size_t align_;                            ///< asked for
    std::unique_ptr<std::byte[], Free> data_; ///< its deleter knows the alignment it has
    size_t size_ = 0;
};

} // namespace formats
