#pragma once
// A dynamic bitset of GPU positions (0..size-1) for the matcher's domains and adjacency rows.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hal::match {

class GpuSet {
public:
    GpuSet() = default;
    explicit GpuSet(size_t size, bool all = false)
        : words_((size + 63) / 64, all ? ~0ull : 0ull), size_(size) {
        if (all && size % 64)
            words_.back() = (1ull << (size % 64)) - 1;
    }

    size_t size() const { return size_; }
    bool test(size_t i) const { return (words_[i / 64] >> (i % 64)) & 1; }
    void set(size_t i) { words_[i / 64] |= 1ull << (i % 64); }
    void reset(size_t i) { words_[i / 64] &= ~(1ull << (i % 64)); }
    size_t count() const {
        size_t n = 0;
        for (uint64_t w : words_)
            n += static_cast<size_t>(std::popcount(w));
        return n;
    }
    bool any() const {
        for (uint64_t w : words_)
            if (w)
                return true;
        return false;
    }
    bool none() const { return !any(); }
    bool intersects(const GpuSet& o) const {
        for (size_t i = 0; i < words_.size(); ++i)
            if (words_[i] & o.words_[i])
                return true;
        return false;
    }
    GpuSet& operator&=(const GpuSet& o) {
        for (size_t i = 0; i < words_.size(); ++i)
            words_[i] &= o.words_[i];
        return *this;
    }
    GpuSet& operator|=(const GpuSet& o) {
        for (size_t i = 0; i < words_.size(); ++i)
            words_[i] |= o.words_[i];
        return *this;
    }
    /// Removes every member of `o`.
    GpuSet& subtract(const GpuSet& o) {
        for (size_t i = 0; i < words_.size(); ++i)
            words_[i] &= ~o.words_[i];
        return *this;
    }
    bool operator==(const GpuSet& o) const { return words_ == o.words_; }
    /// First member at or after `from`, or size() when none.
    size_t next(size_t from) const {
        if (from >= size_)
            return size_;
        size_t wi = from / 64;
        uint64_t w = words_[wi] & (~0ull << (from % 64));
        for (;;) {
            if (w)
                return wi * 64 + static_cast<size_t>(std::countr_zero(w));
            if (++wi >= words_.size())
                return size_;
            w = words_[wi];
        }
    }
    size_t first() const { return next(0); }
    const std::vector<uint64_t>& words() const { return words_; }

private:
    std::vector<uint64_t> words_;
    size_t size_ = 0;
};

/// Iterates the members of a GpuSet: for (size_t i = s.first(); i < s.size(); i = s.next(i + 1)).
#define GPUSET_FOR(var, set) for (size_t var = (set).first(); var < (set).size(); var = (set).next(var + 1))

} // namespace hal::match
