#include "content/stream.h"

#include <algorithm>
#include <sys/mman.h>

namespace content {

void Fnv1a64::update(std::span<const std::byte> data) {
    for (std::byte b : data) {
        hash_ ^= static_cast<uint8_t>(b);
        hash_ *= 0x100000001b3ull;
    }
}

StagingBuffer::StagingBuffer(uint64_t capacity) {
    const uint64_t page = 4096;
    capacity_ = std::max<uint64_t>(page, (capacity + page - 1) / page * page);
    // mmap rather than new[]: the pages are committed only when touched, and unmapped at once.
    void* p = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        capacity_ = page;
        p = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    if (p == MAP_FAILED) {
        // Out of address space even for one page: fall back to this buffer's own page.
        capacity_ = fallback_.size();
        data_ = fallback_.data();
        mapped_ = false;
        return;
    }
    data_ = static_cast<std::byte*>(p);
}

StagingBuffer::~StagingBuffer() {
    if (mapped_)
        munmap(data_, capacity_);
}

} // namespace content
