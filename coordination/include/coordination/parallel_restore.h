#pragma once
/// \file
/// Parallel restore, as CRIU's own plugin does it: a restored task recreates its GPU objects and,
/// instead of copying their contents itself, hands them to criu's main process (a ContentJob:
/// what to restore and an fd of each BO, a dma-buf or the mock's equivalent); the main process
/// restores them on threads of its own while criu restores the rest of the process tree. Every
/// job is finished and its result checked before any task resumes (finish()).
///
/// Jobs run in lanes: the jobs of one lane (one GPU) in order, lanes at once, each lane with its
/// share of the staging budget (max-buffer-size), which all lanes together never exceed.

#include "base/result.h"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace coordination {

using base::Error;
using base::Result;

/// BO contents a task hands over.
struct ContentJob {
    std::string lane;     ///< jobs of one lane run in order, lanes at once ("GPU 0x1234")
    uint32_t lanes = 1;   ///< how many lanes the checkpoint has (GPUs): sizes each lane's share
    std::string payload;  ///< the backend's description of the job
    std::vector<int> fds; ///< the BOs; owned by whoever holds the job (the backend closes them)
};

/// A restored task's way to hand jobs to criu's main process.
class ContentHandoff {
public:
    virtual ~ContentHandoff() = default;
    /// Sends `job`; the receiver gets copies of its fds, the caller keeps its own.
    virtual Result<void> send(const ContentJob& job) = 0;
};

/// Where criu's main process receives jobs from.
class JobSource {
public:
    virtual ~JobSource() = default;
    /// The next job, waiting for one; nullopt once stop() was called and every job sent before
    /// it was received.
    virtual Result<std::optional<ContentJob>> next() = 0;
    /// Ends the stream after the jobs already sent (called from another thread than next()).
    virtual Result<void> stop() = 0;
};

/// Runs one job with a lane's staging area.
using ContentJobRunner = std::function<Result<void>(ContentJob& job, std::span<std::byte> staging)>;
/// Closes the fds of a job that will not run (after an earlier failure).
using ContentJobDiscarder = std::function<void(ContentJob& job)>;

/// The receiving side, in criu's main process.
class ParallelRestore {
public:
    /// Jobs run through `run` (or are dropped through `discard` after a failure), with lanes
    /// sharing `stagingBudget` bytes.
    ParallelRestore(ContentJobRunner run, ContentJobDiscarder discard, uint64_t stagingBudget);
    ~ParallelRestore();
    ParallelRestore(const ParallelRestore&) = delete;
    ParallelRestore& operator=(const ParallelRestore&) = delete;

    /// Starts receiving jobs from `source` on a thread of its own.
    void start(std::unique_ptr<JobSource> source);
    /// True between start() and finish().
    bool running() const { return receiver_.joinable(); }
    /// Stops the source after the jobs sent so far, waits for every job and every lane, and
    /// returns the first error (in the order jobs failed). Jobs after a failure do not run.
    Result<void> finish();
    /// Jobs run so far, and bytes of staging the lanes held at most at once (tests, benchmarks).
    size_t jobsRun() const;
    uint64_t peakStagingBytes() const;

private:
    struct Lane {
        std::vector<ContentJob> queue;
        bool running = false;
    };

    void receive();
    void dispatch(ContentJob job);
    void runLane(std::string name, uint64_t share);
    void fail(Error error);
    uint64_t acquire(uint64_t share);
    void release(uint64_t bytes);

    ContentJobRunner run_;
    ContentJobDiscarder discard_;
    uint64_t budget_;
    std::unique_ptr<JobSource> source_;
    std::thread receiver_;

    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::string, Lane> lanes_;
    std::vector<std::thread> laneThreads_;
    uint64_t available_ = 0;
    uint64_t held_ = 0;
    uint64_t peakHeld_ = 0;
    size_t jobsRun_ = 0;
    std::optional<Error> error_;
};

} // namespace coordination
