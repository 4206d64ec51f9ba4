#include "direct_stream.h"

#include "base/prompt_wakeup.h"
#include "base/quiet_thread.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace hal {

DirectStream::DirectStream(int fd, uint64_t start, uint64_t size)
    : fd_(fd), pos_(start), size_(size), next_(start / kBlock) {
    // One mapping, its blocks on 2 MiB boundaries and advised to be huge pages before they are
    // first touched (memory faulted in as small pages stays small).
    mappingBytes_ = (kRing + 1) * kBlock;
    mapping_ =
        mmap(nullptr, mappingBytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping_ == MAP_FAILED) {
        mapping_ = nullptr;
        return;
    }
    auto first = (reinterpret_cast<uintptr_t>(mapping_) + kBlock - 1) / kBlock * kBlock;
    madvise(reinterpret_cast<void*>(first), kRing * kBlock, MADV_HUGEPAGE);
    for (size_t i = 0; i < kRing; ++i)
        ring_[i].data = reinterpret_cast<std::byte*>(first + i * kBlock);
    for (size_t i = 0; i < kReaders; ++i)
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
    if (mapping_)
        munmap(mapping_, mappingBytes_);
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
        Block& block = ring_[index % kRing];
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
                   ring_[next_ % kRing].index == kFree;
        });
        if (stop_ || failed_ || next_ * kBlock >= size_)
            return;
        uint64_t index = next_++;
        Block& block = ring_[index % kRing];
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

} // namespace hal
