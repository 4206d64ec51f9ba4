#pragma once
/// \file
/// Keeps what a backend opens in a restored task clear of the task's own fd numbers.
///
/// criu calls RESTORE_EXT_FILE in the task it restores, while it is still placing the task's fds
/// at their checkpointed numbers, and it refuses to place one on a number that is taken ("fd N
/// already in use", criu/util.c reopen_fd_as). A backend that keeps an fd of its own in the task
/// (KFD's render nodes of the target GPUs, its connection to a driver) gets the lowest free
/// number from the kernel, which may be one of the task's. criu's find_unused_fd_pid(pid) says
/// the first number above every fd of the task (and below criu's service fds): the numbers below
/// it are held while the hook runs, so whatever the backend opens lands at that number or above.

#include <vector>

namespace frontend {

/// Holds every free fd number below `floor` (with copies of one fd of /dev/null) for its lifetime.
/// A floor of 0 or less holds nothing.
class LowFdsHeld {
public:
    explicit LowFdsHeld(int floor);
    ~LowFdsHeld();
    LowFdsHeld(const LowFdsHeld&) = delete;
    LowFdsHeld& operator=(const LowFdsHeld&) = delete;

private:
    std::vector<int> held_;
};

} // namespace frontend
