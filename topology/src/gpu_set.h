#pragma once
// A set of GPU positions (0..size-1) for the matcher's domains and adjacency rows. Up to 128 GPUs
// it lives inside the object, so the search copies its state without allocating.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace topology::match {

class GpuSet {
public:
    GpuSet() = default;
    explicit GpuSet(size_t size, bool all = false) : size_(size), words_((size + 63) / 64) {
        if (words_ > kInline)
            heap_.assign(words_, 0);
        uint64_t* w = data();
        for (size_t i = 0; i < words_; ++i)
            w[i] = all ? ~0ull : 0ull;
        if (all && size % 64)
            w[words_ - 1] = (1ull << (size % 64)) - 1;
    }

    size_t size() const { return size_; }
    bool test(size_t i) const { return (data()[i / 64] >> (i % 64)) & 1; }
    void set(size_t i) { data()[i / 64] |= 1ull << (i % 64); }
    void reset(size_t i) { data()[i / 64] &= ~(1ull << (i % 64)); }
    size_t count() const {
        size_t n = 0;
        for (size_t i = 0; i < words_; ++i)
            n += static_cast<size_t>(std::popcount(data()[i]));
        return n;
    }
    bool any() const {
        for (size_t i = 0; i < words_; ++i)
            if (data()[i])
                return true;
        return false;
    }
    bool none() const { return !any(); }
    bool intersects(const GpuSet& o) const {
        for (size_t i = 0; i < words_; ++i)
            if (data()[i] & o.data()[i])
                return true;
        return false;
    }
    GpuSet& operator&=(const GpuSet& o) {
        for (size_t i = 0; i < words_; ++i)
            data()[i] &= o.data()[i];
        return *this;
    }
    GpuSet& operator|=(const GpuSet& o) {
        for (size_t i = 0; i < words_; ++i)
            data()[i] |= o.data()[i];
        return *this;
    }
    /// Removes every member of `o`.
    GpuSet& subtract(const GpuSet& o) {
        for (size_t i = 0; i < words_; ++i)
            data()[i] &= ~o.data()[i];
        return *this;
    }
    bool operator==(const GpuSet& o) const {
        if (size_ != o.size_)
            return false;
        for (size_t i = 0; i < words_; ++i)
            if (data()[i] != o.data()[i])
                return false;
        return true;
    }
    /// First member at or after `from`, or size() when none.
    size_t next(size_t from) const {
        if (from >= size_)
            return size_;
        size_t wi = from / 64;
        uint64_t w = data()[wi] & (~0ull << (from % 64));
        for (;;) {
            if (w)
                return wi * 64 + static_cast<size_t>(std::countr_zero(w));
            if (++wi >= words_)
                return size_;
            w = data()[wi];
        }
    }
    size_t first() const { return next(0); }
    /// The 64-bit words, lowest positions first.
    size_t wordCount() const { return words_; }
    uint64_t word(size_t i) const { return data()[i]; }

private:
    static constexpr size_t kInline = 2;
    const uint64_t* data() const { return words_ > kInline ? heap_.data() : inline_; }
    uint64_t* data() { return words_ > kInline ? heap_.data() : inline_; }

    size_t size_ = 0;
    size_t words_ = 0;
    uint64_t inline_[kInline] = {0, 0};
    std::vector<uint64_t> heap_;
};

/// Iterates the members of a GpuSet: for (size_t i = s.first(); i < s.size(); i = s.next(i + 1)).
#define GPUSET_FOR(var, set)                                                                       \
    for (size_t var = (set).first(); var < (set).size(); var = (set).next(var + 1))

} // namespace topology::match
