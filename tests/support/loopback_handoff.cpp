#include "loopback_handoff.h"

namespace testsupport {

struct LoopbackHandoff::Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<hal::ContentJob> jobs;
    bool stopped = false;
    size_t sent = 0;
};

namespace {

class LoopbackSource final : public hal::JobSource {
public:
    explicit LoopbackSource(std::shared_ptr<LoopbackHandoff::Queue> queue)
        : queue_(std::move(queue)) {}
    hal::Result<std::optional<hal::ContentJob>> next() override;
    hal::Result<void> stop() override;

private:
    std::shared_ptr<LoopbackHandoff::Queue> queue_;
};

} // namespace

LoopbackHandoff::LoopbackHandoff(std::function<int(int)> dup)
    : dup_(std::move(dup)), queue_(std::make_shared<Queue>()) {}

hal::Result<void> LoopbackHandoff::send(const hal::ContentJob& job) {
    hal::ContentJob copy = job;
    for (int& fd : copy.fds) {
        fd = dup_(fd);
        if (fd < 0)
            return hal::makeErrnoError(hal::ErrorCode::Io, -fd, "loopback handoff: dup");
    }
    {
        std::lock_guard lock(queue_->mu);
        queue_->jobs.push_back(std::move(copy));
        ++queue_->sent;
    }
    queue_->cv.notify_all();
    return hal::success();
}

size_t LoopbackHandoff::sent() const {
    std::lock_guard lock(queue_->mu);
    return queue_->sent;
}

std::unique_ptr<hal::JobSource> LoopbackHandoff::source() {
    return std::make_unique<LoopbackSource>(queue_);
}

hal::Result<std::optional<hal::ContentJob>> LoopbackSource::next() {
    auto* q = queue_.get();
    std::unique_lock lock(q->mu);
    q->cv.wait(lock, [&] { return q->stopped || !q->jobs.empty(); });
    if (q->jobs.empty())
        return std::optional<hal::ContentJob>();
    hal::ContentJob job = std::move(q->jobs.front());
    q->jobs.erase(q->jobs.begin());
    return std::optional<hal::ContentJob>(std::move(job));
}

hal::Result<void> LoopbackSource::stop() {
    auto* q = queue_.get();
    {
        std::lock_guard lock(q->mu);
        q->stopped = true;
    }
    q->cv.notify_all();
    return hal::success();
}

std::unique_ptr<hal::ParallelRestore> parallelRestoreOn(hal::Device& device, uint64_t budget) {
    return std::make_unique<hal::ParallelRestore>(
        [&device](hal::ContentJob& job, std::span<std::byte> staging) {
            return device.restoreHandedContents(job, staging);
        },
        [&device](hal::ContentJob& job) { device.discardHandedContents(job); }, budget);
}

} // namespace testsupport
