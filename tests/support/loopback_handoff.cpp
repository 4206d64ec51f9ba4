#include "loopback_handoff.h"

namespace testsupport {

struct LoopbackHandoff::Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<coordination::ContentJob> jobs;
    bool stopped = false;
    size_t sent = 0;
};

namespace {

class LoopbackSource final : public coordination::JobSource {
public:
    explicit LoopbackSource(std::shared_ptr<LoopbackHandoff::Queue> queue)
        : queue_(std::move(queue)) {}
    base::Result<std::optional<coordination::ContentJob>> next() override;
    base::Result<void> stop() override;

private:
    std::shared_ptr<LoopbackHandoff::Queue> queue_;
};

} // namespace

LoopbackHandoff::LoopbackHandoff(std::function<int(int)> dup)
    : dup_(std::move(dup)), queue_(std::make_shared<Queue>()) {}

base::Result<void> LoopbackHandoff::send(const coordination::ContentJob& job) {
    coordination::ContentJob copy = job;
    for (int& fd : copy.fds) {
        fd = dup_(fd);
        if (fd < 0)
            return base::makeErrnoError(base::ErrorCode::Io, -fd, "loopback handoff: dup");
    }
    {
        std::lock_guard lock(queue_->mu);
        queue_->jobs.push_back(std::move(copy));
        ++queue_->sent;
    }
    queue_->cv.notify_all();
    return base::success();
}

size_t LoopbackHandoff::sent() const {
    std::lock_guard lock(queue_->mu);
    return queue_->sent;
}

std::unique_ptr<coordination::JobSource> LoopbackHandoff::source() {
    return std::make_unique<LoopbackSource>(queue_);
}

base::Result<std::optional<coordination::ContentJob>> LoopbackSource::next() {
    auto* q = queue_.get();
    std::unique_lock lock(q->mu);
    q->cv.wait(lock, [&] { return q->stopped || !q->jobs.empty(); });
    if (q->jobs.empty())
        return std::optional<coordination::ContentJob>();
    coordination::ContentJob job = std::move(q->jobs.front());
    q->jobs.erase(q->jobs.begin());
    return std::optional<coordination::ContentJob>(std::move(job));
}

base::Result<void> LoopbackSource::stop() {
    auto* q = queue_.get();
    {
        std::lock_guard lock(q->mu);
        q->stopped = true;
    }
    q->cv.notify_all();
    return base::success();
}

std::unique_ptr<coordination::ParallelRestore> parallelRestoreOn(hal::Device& device,
                                                                 uint64_t budget) {
    return std::make_unique<coordination::ParallelRestore>(
        [&device](coordination::ContentJob& job, std::span<std::byte> staging) {
            return device.restoreHandedContents(job, staging);
        },
        [&device](coordination::ContentJob& job) { device.discardHandedContents(job); }, budget);
}

} // namespace testsupport
