#include "write_behind.h"

#include "base/prompt_wakeup.h"
#include "base/quiet_thread.h"

#include <algorithm>
#include <cstring>

namespace formats {

using base::quietThread;
using base::Result;
using base::stopWorker;
using base::success;
using base::wakePromptly;

WriteBehind::WriteBehind(ImageWriter& out, size_t bufferSize)
    : out_(out), bufferSize_(bufferSize), align_(std::max<size_t>(out.directAlignment(), 1)),
      end_(out.written()), free_{1, 0} {
    if (align_ > kScratchAlign) // the buffers could not start where such a write needs
        align_ = 1;
}

WriteBehind::~WriteBehind() {
    stopWorker(worker_, mu_, changed_, stop_);
}

Result<std::span<std::byte>> WriteBehind::acquire() {
    int buffer = std::exchange(parked_, -1);
    {
        std::unique_lock lock(mu_);
        if (buffer < 0)
            changed_.wait(lock, [&] { return error_ || !free_.empty(); });
        if (error_) {
            if (buffer >= 0)
                free_.push_back(buffer);
            return *error_;
        }
        if (buffer < 0) {
            buffer = free_.back();
            free_.pop_back();
        }
    }
    // Outside the worker's reach: this buffer is the caller's until it is submitted. The bytes
    // carried from the last one are not: the worker may still be writing the blocks before them.
    current_ = buffer;
    std::span<std::byte> bytes = buffers_[buffer].atLeast(bufferSize_ + align_);
    from_ = head_ = end_ % align_; // what comes before in its block is written already
    if (carried_) {
        from_ = carried_->from % align_;
        memmove(bytes.data() + from_, buffers_[carried_->buffer].bytes().data() + carried_->from,
                carried_->to - carried_->from);
        carried_.reset();
    }
    return bytes.subspan(head_, bufferSize_);
}

void WriteBehind::release() {
    int buffer = std::exchange(current_, -1);
    if (head_ > from_) { // it holds the bytes carried into it: they are carried on
        carried_ = Span{buffer, from_, head_};
        parked_ = buffer;
        return;
    }
    {
        std::lock_guard lock(mu_);
        free_.push_back(buffer);
    }
    changed_.notify_all();
}

Result<void> WriteBehind::submit(size_t length, bool now) {
    int buffer = std::exchange(current_, -1);
    size_t to = head_ + length;
    size_t aligned = to / align_ * align_;
    end_ += length;
    std::optional<Span> span;
    if (aligned > from_)
        span = Span{buffer, from_, aligned};
    if (to > std::max(from_, aligned))
        carried_ = Span{buffer, std::max(from_, aligned), to};
    if (!span && carried_) {
        parked_ = buffer;
    } else if (!span) {
        {
            std::lock_guard lock(mu_);
            free_.push_back(buffer);
        }
        changed_.notify_all();
    } else if (now && !worker_.joinable()) {
        // Nothing is queued before it: written here, with no thread started for it.
        auto written = writeSpan(*span);
        std::lock_guard lock(mu_);
        free_.push_back(buffer);
        if (!written.ok() && !error_)
            error_ = written.error();
        HAL_TRY(written);
    } else {
        {
            std::lock_guard lock(mu_);
            queued_.push_back(*span);
        }
        changed_.notify_all();
        if (!worker_.joinable())
            worker_ = quietThread([this] { work(); });
    }
    return now ? finish() : success();
}

Result<void> WriteBehind::drain() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return error_ || (queued_.empty() && !writing_); });
    if (error_)
        return *error_;
    return success();
}

Result<void> WriteBehind::finish() {
    HAL_TRY(drain());
    if (!carried_)
        return success();
    Span carried = *std::exchange(carried_, std::nullopt);
    auto written = out_.write(buffers_[carried.buffer].bytes().subspan(
        carried.from, carried.to - carried.from)); // less than a block: through the page cache
    std::lock_guard lock(mu_);
    if (parked_ >= 0)
        free_.push_back(std::exchange(parked_, -1));
    if (!written.ok() && !error_)
        error_ = written.error();
    return written;
}

Result<void> WriteBehind::writeSpan(const Span& span) {
    return out_.writeDirect(buffers_[span.buffer].bytes().subspan(span.from, span.to - span.from));
}

void WriteBehind::work() {
    // Woken by each write's end while the caller seals or compresses the next frame: the next
    // write goes out at once, not after the caller's turn on the CPU, or the disk idles.
    wakePromptly();
    std::unique_lock lock(mu_);
    for (;;) {
        changed_.wait(lock, [&] { return stop_ || !queued_.empty(); });
        if (stop_)
            return;
        Span span = queued_.front();
        queued_.pop_front();
        writing_ = true;
        lock.unlock();
        auto written = writeSpan(span);
        lock.lock();
        writing_ = false;
        free_.push_back(span.buffer);
        if (!written.ok() && !error_) {
            error_ = written.error();
            for (const Span& s : queued_) // not written after the one that failed
                free_.push_back(s.buffer);
            queued_.clear();
        }
        changed_.notify_all();
    }
}

} // namespace formats
