#pragma once
/// \file
/// An fdstore with criu's semantics for processes forked after it was made, for tests of GPU
/// memory handed between restored tasks (coordination::ShareExchange): add keeps a copy of the fd
/// (in the adding process) and returns its id; get, in any of those processes, gives a new fd of
/// that copy (pidfd_getfd, as criu's fdstore hands fds to its restored tasks).

#include "coordination/share_exchange.h"

#include <atomic>

#include <sys/types.h>

namespace testsupport {

/// The fdstore (see the file comment); at most 64 entries.
class ForkSharedFdStore {
public:
    ForkSharedFdStore();
    ~ForkSharedFdStore();
    ForkSharedFdStore(const ForkSharedFdStore&) = delete;
    ForkSharedFdStore& operator=(const ForkSharedFdStore&) = delete;
    /// False when its shared table could not be mapped.
    bool ok() const { return table_ != nullptr; }
    /// The store's add and get, usable in this process and its forks.
    coordination::FdStore store();

private:
    static constexpr int kEntries = 64;
    struct Entry {
        pid_t pid;
        int fd;
    };
    struct Table {
        std::atomic<int> next;
        std::atomic<int> ready[kEntries];
        Entry entries[kEntries];
    };
    Table* table_ = nullptr;
};

} // namespace testsupport
