#include "write_behind.h"

#include "base/quiet_thread.h"

namespace hal {

WriteBehind::WriteBehind(ImageWriter& out, size_t bufferSize)
    : out_(out), bufferSize_(bufferSize), free_{1, 0} {}

WriteBehind::~WriteBehind() {
    stopWorker(worker_, mu_, changed_, stop_);
}

Result<std::span<std::byte>> WriteBehind::acquire() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return error_ || !free_.empty(); });
    if (error_)
        return *error_;
    current_ = free_.back();
    free_.pop_back();
    // Outside the worker's reach: this buffer is the caller's until it is submitted.
    return buffers_[current_].atLeast(bufferSize_);
}

void WriteBehind::release() {
    {
        std::lock_guard lock(mu_);
        free_.push_back(current_);
        current_ = -1;
    }
    changed_.notify_all();
}

Result<void> WriteBehind::submit(size_t length, bool now) {
    int buffer = std::exchange(current_, -1);
    if (now && !worker_.joinable()) {
        // Nothing is queued before it: written here, with no thread started for it.
        auto written = out_.write(buffers_[buffer].bytes().first(length));
        std::lock_guard lock(mu_);
        free_.push_back(buffer);
        if (!written.ok() && !error_)
            error_ = written.error();
        return written;
    }
    {
        std::lock_guard lock(mu_);
        queued_.emplace_back(buffer, length);
    }
    changed_.notify_all();
    if (!worker_.joinable())
        worker_ = quietThread([this] { work(); });
    return now ? drain() : success();
}

Result<void> WriteBehind::drain() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return error_ || (queued_.empty() && !writing_); });
    if (error_)
        return *error_;
    return success();
}

void WriteBehind::work() {
    std::unique_lock lock(mu_);
    for (;;) {
        changed_.wait(lock, [&] { return stop_ || !queued_.empty(); });
        if (stop_)
            return;
        auto [buffer, length] = queued_.front();
        queued_.pop_front();
        writing_ = true;
        lock.unlock();
        auto written = out_.write(buffers_[buffer].bytes().first(length));
        lock.lock();
        writing_ = false;
        free_.push_back(buffer);
        if (!written.ok() && !error_) {
            error_ = written.error();
            for (auto& [b, n] : queued_) // not written after the one that failed
                free_.push_back(b);
            queued_.clear();
        }
        changed_.notify_all();
    }
}

} // namespace hal
