#pragma once
/// \file
/// Parallel restore within one test process: a ContentHandoff whose jobs go to a JobSource of the
/// same process, each fd copied with `dup` as SCM_RIGHTS would copy it (a fake kernel's dup for
/// fakes whose fds are not this process's), and a ParallelRestore that runs them on a Device.

#include "coordination/parallel_restore.h"
#include "hal/device.h"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace testsupport {

class LoopbackHandoff final : public coordination::ContentHandoff {
public:
    explicit LoopbackHandoff(std::function<int(int)> dup);
    base::Result<void> send(const coordination::ContentJob& job) override;
    /// The receiving side (one per handoff).
    std::unique_ptr<coordination::JobSource> source();
    /// Jobs sent so far.
    size_t sent() const;
    /// What the handoff and its source share.
    struct Queue;

private:
    std::function<int(int)> dup_;
    std::shared_ptr<Queue> queue_;
};

/// A ParallelRestore running jobs on `device` within `budget` bytes of staging.
std::unique_ptr<coordination::ParallelRestore> parallelRestoreOn(hal::Device& device,
                                                                 uint64_t budget);

} // namespace testsupport
