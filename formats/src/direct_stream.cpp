#include "direct_stream.h"

#include "base/prompt_wakeup.h"
#include "base/quiet_thread.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

namespace formats {

using base::quietThread;
using base::wakePromptly;

namespace {

/// Blocks of kBlock bytes on kBlock boundaries, advised to be huge pages before first touched,
/// kept for the next stream once one ends (up to kKeep of them): faulting in and zeroing fresh
/// huge pages for every file costs a restore of many small files more than it saves.
class BlockPool {
public:
    static constexpr size_t kKeep = 16;
    static BlockPool& get() {
        static BlockPool pool;
        return pool;
    }
    std::byte* take() {
        {
            std::lock_guard lock(mu_);
            if (!free_.empty()) {
                std::byte* b = free_.back();
                free_.pop_back();
                return b;
            }
        }
        // Twice the size, so that a whole aligned block lies within; the rest is given back.
        size_t span = 2 * DirectStream::kBlock;
        void* m = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return nullptr;
        auto start = reinterpret_cast<uintptr_t>(m);
        uintptr_t block =
            (start + DirectStream::kBlock - 1) / DirectStream::kBlock * DirectStream::kBlock;
        if (block > start)
            munmap(m, block - start);
        if (block + DirectStream::kBlock < start + span)
            munmap(reinterpret_cast<void*>(block + DirectStream::kBlock),
                   start + span - block - DirectStream::kBlock);
        madvise(reinterpret_cast<void*>(block), DirectStream::kBlock, MADV_HUGEPAGE);
        return reinterpret_cast<std::byte*>(block);
    }
    void give(std::byte* b) {
        {
            std::lock_guard lock(mu_);
            if (free_.size() < kKeep) {
                free_.push_back(b);
                return;
            }
        }
        munmap(b, DirectStream::kBlock);
    }

private:
    std::mutex mu_;
    std::vector<std::byte*> free_;
};

} // namespace

DirectStream::DirectStream(int fd, uint64_t start, uint64_t size)
    : fd_(fd), pos_(start), size_(size), next_(start / kBlock) {
    // No more blocks than the file has from `start` on, nor readers than blocks.
    uint64_t blocks = size > start ? (size + kBlock - 1) / kBlock - start / kBlock : 0;
    ringSize_ = static_cast<size_t>(std::min<uint64_t>(kRing, blocks));
    for (size_t i = 0; i < ringSize_; ++i)
        if (!(ring_[i].data = BlockPool::get().take())) {
            ringSize_ = i;
            break;
        }
    if (ringSize_ == 0)
        return;
    for (size_t i = 0; i < std::min(kReaders, ringSize_); ++i)
        readers_.push_back(quietThread([this] { readAhead(); }));
}

DirectStream::~DirectStream() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : readers_)
        t.join();
    for (size_t i = 0; i < ringSize_; ++i)
        BlockPool::get().give(ring_[i].data);
    ::close(fd_);
}

bool DirectStream::read(std::span<std::byte> out) {
    if (!started() || broken_)
        return false;
    while (!out.empty()) {
        if (pos_ >= size_) {
            broken_ = true;
            return false;
        }
        uint64_t index = pos_ / kBlock;
        Block& block = ring_[index % ringSize_];
        {
            std::unique_lock lock(mu_);
            changed_.wait(lock, [&] { return block.index == index && block.ready; });
            if (block.failed) {
                broken_ = true;
                return false;
            }
        }
        // The block is the caller's until it gives it back below.
        uint64_t at = pos_ - index * kBlock;
        if (at >= block.valid) {
            broken_ = true;
            return false;
        }
        size_t n = static_cast<size_t>(std::min<uint64_t>(out.size(), block.valid - at));
        memcpy(out.data(), block.data + at, n);
        out = out.subspan(n);
        pos_ += n;
        if (at + n == block.valid) {
            {
                std::lock_guard lock(mu_);
                block.index = kFree;
                block.ready = false;
            }
            changed_.notify_all();
        }
    }
    return true;
}

void DirectStream::readAhead() {
    // Woken by each read's end while the caller decrypts and copies on every core: the next read
    // goes out at once, or the disk idles.
    wakePromptly();
    std::unique_lock lock(mu_);
    for (;;) {
        changed_.wait(lock, [&] {
            return stop_ || failed_ || next_ * kBlock >= size_ ||
                   ring_[next_ % ringSize_].index == kFree;
        });
        if (stop_ || failed_ || next_ * kBlock >= size_)
            return;
        uint64_t index = next_++;
        Block& block = ring_[index % ringSize_];
        block.index = index;
        block.ready = false;
        lock.unlock();
        uint64_t offset = index * kBlock;
        size_t want = static_cast<size_t>(std::min<uint64_t>(kBlock, size_ - offset));
        ssize_t n;
        do
            n = pread(fd_, block.data, kBlock, static_cast<off_t>(offset));
        while (n < 0 && errno == EINTR);
        lock.lock();
        // A block that failed is handed over as such: the caller, reaching it, reads from there
        // on its own way; nothing after it is read.
        block.failed = n < 0 || static_cast<size_t>(n) < want;
        failed_ = failed_ || block.failed;
        block.valid = block.failed ? 0 : want;
        block.ready = true;
        changed_.notify_all();
    }
}

} // namespace formats
