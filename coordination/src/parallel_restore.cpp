#include "coordination/parallel_restore.h"

#include "base/log.h"
#include "base/quiet_thread.h"
#include "content/stream.h"

#include <algorithm>

namespace coordination {

using base::Error;
using base::quietThread;
using base::Result;
using base::strFormat;
using base::success;
using content::StagingBuffer;

namespace {

constexpr uint64_t kPage = 4096;
/// The least a lane runs with: a few pages (the pipeline's slots).
constexpr uint64_t kLeastShare = 4 * kPage;

} // namespace

ParallelRestore::ParallelRestore(ContentJobRunner run, ContentJobDiscarder discard,
                                 uint64_t stagingBudget)
    : run_(std::move(run)), discard_(std::move(discard)),
      budget_(std::max(stagingBudget, kLeastShare)), available_(budget_) {}

ParallelRestore::~ParallelRestore() {
    if (running())
        (void)finish();
}

void ParallelRestore::start(std::unique_ptr<JobSource> source) {
    source_ = std::move(source);
    receiver_ = quietThread([this] { receive(); });
}

void ParallelRestore::receive() {
    for (;;) {
        auto next = source_->next();
        if (!next.ok()) {
            fail(std::move(next.error().addContext(
                "while receiving BO contents handed over by the restored tasks")));
            return;
        }
        if (!next.value())
            return;
        dispatch(std::move(*next.value()));
    }
}

void ParallelRestore::dispatch(ContentJob job) {
    std::unique_lock lock(mu_);
    if (error_) {
        lock.unlock();
        discard_(job);
        return;
    }
    uint64_t share = budget_ / std::max<uint32_t>(job.lanes, 1) / kPage * kPage;
    share = std::clamp(share, kLeastShare, budget_);
    std::string name = job.lane;
    Lane& lane = lanes_[name];
    lane.queue.push_back(std::move(job));
    if (lane.running)
        return;
    lane.running = true;
    laneThreads_.push_back(quietThread([this, name, share] { runLane(name, share); }));
}

uint64_t ParallelRestore::acquire(uint64_t share) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return available_ >= share; });
    available_ -= share;
    held_ += share;
    peakHeld_ = std::max(peakHeld_, held_);
    return share;
}

void ParallelRestore::release(uint64_t bytes) {
    {
        std::lock_guard lock(mu_);
        available_ += bytes;
        held_ -= bytes;
    }
    cv_.notify_all();
}

void ParallelRestore::runLane(std::string name, uint64_t share) {
    uint64_t held = acquire(share);
    {
        StagingBuffer staging(held);
        for (;;) {
            std::unique_lock lock(mu_);
            Lane& lane = lanes_[name];
            if (lane.queue.empty()) {
                lane.running = false;
                break;
            }
            ContentJob job = std::move(lane.queue.front());
            lane.queue.erase(lane.queue.begin());
            bool failed = error_.has_value();
            lock.unlock();
            if (failed) {
                discard_(job);
                continue;
            }
            auto r = run_(job, staging.span());
            {
                std::lock_guard count(mu_);
                ++jobsRun_;
            }
            if (!r.ok())
                fail(std::move(r.error().addContext(strFormat(
                    "while restoring the BO contents of %s handed over by a restored task",
                    name.c_str()))));
        }
    }
    release(held);
}

void ParallelRestore::fail(Error error) {
    std::lock_guard lock(mu_);
    if (!error_)
        error_ = std::move(error);
}

Result<void> ParallelRestore::finish() {
    if (!running())
        return success();
    auto stopped = source_->stop();
    if (!stopped.ok())
        fail(std::move(stopped.error().addContext("while ending the parallel restore")));
    receiver_.join();
    // The receiver is done: no lane starts any more.
    for (std::thread& t : laneThreads_)
        t.join();
    laneThreads_.clear();
    source_.reset();
    std::lock_guard lock(mu_);
    if (error_)
        return std::move(*error_);
    return success();
}

size_t ParallelRestore::jobsRun() const {
    std::lock_guard lock(mu_);
    return jobsRun_;
}

uint64_t ParallelRestore::peakStagingBytes() const {
    std::lock_guard lock(mu_);
    return peakHeld_;
}

} // namespace coordination
