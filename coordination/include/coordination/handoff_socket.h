#pragma once
/// \file
/// The transport of parallel restore between restored tasks and criu's main process: a unix
/// SOCK_SEQPACKET socket pair made in criu's main process before it forks. The receiving end
/// stays there; the tasks reach the sending end through criu's fdstore (criu closes every other
/// fd a task inherits), which works whatever namespaces the tasks are in, unlike the abstract
/// socket address CRIU's own plugin connects to.
///
/// To send a job, a task makes a socket pair of its own, passes one end over the shared socket,
/// and writes the job into the other: jobs of several tasks never interleave, and a job may
/// carry any number of fds (a message carries at most 253).

#include "base/result.h"
#include "coordination/fd_message.h"
#include "coordination/parallel_restore.h"

#include <functional>
#include <memory>

namespace coordination {

using base::Result;

/// The shared socket pair, made in criu's main process.
class HandoffChannel {
public:
    /// Creates the pair (both ends close-on-exec).
    static Result<std::unique_ptr<HandoffChannel>> create();
    ~HandoffChannel();
    HandoffChannel(const HandoffChannel&) = delete;
    HandoffChannel& operator=(const HandoffChannel&) = delete;

    /// The sending end (the tasks' way in; criu's fdstore keeps a copy of it).
    int sendFd() const { return send_; }
    /// The receiving source of jobs; the channel must outlive it. Its stop() sends the end
    /// marker through the channel's own sending end, after the jobs the tasks sent.
    std::unique_ptr<JobSource> receiver();

private:
    HandoffChannel(int send, int receive) : send_(send), receive_(receive) {}
    int send_;
    int receive_;
};

/// A task's ContentHandoff: `sendFd` gives an fd of the channel's sending end at every send (the
/// task's copy from criu's fdstore, closed after use when `owned`).
struct SendEnd {
    int fd = -1;
    bool owned = false;
};
std::unique_ptr<ContentHandoff> makeSocketHandoff(std::function<Result<SendEnd>()> sendFd);

} // namespace coordination
