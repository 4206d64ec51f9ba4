#include "coordination/share_exchange.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>

namespace coordination {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::Result;
using base::success;

namespace {

/// One published key, in memory shared by every task of the restore.
struct Slot {
    enum : uint32_t { kFree = 0, kClaimed = 1, kReady = 2, kAbandoned = 3 };
    std::atomic<uint32_t> state;
    std::atomic<int32_t> fdstoreId;
    std::atomic<uint64_t> key;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the table is shared between processes: its atomics must be lock-free");

struct Table {
    std::atomic<uint64_t> used; ///< slots claimed so far
    Slot slots[1];              ///< `capacity` of them
};

class TaskShareExchange final : public ShareExchange {
public:
    TaskShareExchange(FdStore store, Table* table, size_t capacity, size_t bytes)
        : store_(std::move(store)), table_(table), capacity_(capacity), bytes_(bytes) {}
    ~TaskShareExchange() override { munmap(table_, bytes_); }

    Result<void> publish(uint64_t key, int fd) override {
        if (find(key))
            return success();
        uint64_t index = table_->used.fetch_add(1);
        if (index >= capacity_)
            return makeError(ErrorCode::OutOfMemory,
                             "more than %zu BOs shared between the restored processes: the "
                             "exchange is full (key 0x%llx)",
                             capacity_, static_cast<unsigned long long>(key));
        Slot& slot = table_->slots[index];
        slot.state.store(Slot::kClaimed);
        int id = store_.add(fd);
        if (id < 0) {
            slot.state.store(Slot::kAbandoned);
            return makeErrnoError(ErrorCode::Io, -id > 0 ? -id : EIO,
                                  "criu's fdstore did not take the fd of shared memory 0x%llx",
                                  static_cast<unsigned long long>(key));
        }
        slot.key.store(key);
        slot.fdstoreId.store(id);
        slot.state.store(Slot::kReady, std::memory_order_release);
        return success();
    }

    Result<int> fetch(uint64_t key, std::chrono::milliseconds timeout,
                      const std::string& what) override {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        auto pause = std::chrono::microseconds(200);
        for (;;) {
            if (const Slot* slot = find(key)) {
                int fd = store_.get(slot->fdstoreId.load());
                if (fd < 0)
                    return makeErrnoError(ErrorCode::Io, -fd > 0 ? -fd : EIO,
                                          "%s: criu's fdstore lost the fd of its shared memory "
                                          "(key 0x%llx, entry %d)",
                                          what.c_str(), static_cast<unsigned long long>(key),
                                          slot->fdstoreId.load());
                return fd;
            }
            if (std::chrono::steady_clock::now() >= deadline)
                return makeError(
                    ErrorCode::NotFound,
                    "%s is memory shared with another process, and no restored process "
                    "recreated that memory within %lld s (key 0x%llx): the process that holds "
                    "it must be part of the same restore",
                    what.c_str(),
                    static_cast<long long>(
                        std::chrono::duration_cast<std::chrono::seconds>(timeout).count()),
                    static_cast<unsigned long long>(key));
            std::this_thread::sleep_for(pause);
            pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(10));
        }
    }

private:
    const Slot* find(uint64_t key) const {
        uint64_t used = std::min<uint64_t>(table_->used.load(), capacity_);
        for (uint64_t i = 0; i < used; ++i) {
            const Slot& slot = table_->slots[i];
            if (slot.state.load(std::memory_order_acquire) == Slot::kReady &&
                slot.key.load() == key)
                return &slot;
        }
        return nullptr;
    }

    FdStore store_;
    Table* table_;
    size_t capacity_;
    size_t bytes_;
};

class LocalShareExchange final : public ShareExchange {
public:
    ~LocalShareExchange() override {
        for (auto& [key, fd] : fds_)
            ::close(fd);
    }

    Result<void> publish(uint64_t key, int fd) override {
        if (fds_.count(key))
            return success();
        int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (copy < 0)
            return makeErrnoError(ErrorCode::Io, errno,
                                  "cannot keep the fd of shared memory 0x%llx",
                                  static_cast<unsigned long long>(key));
        fds_.emplace(key, copy);
        return success();
    }

    Result<int> fetch(uint64_t key, std::chrono::milliseconds, const std::string& what) override {
        auto it = fds_.find(key);
        if (it == fds_.end())
            return makeError(ErrorCode::NotSupported,
                             "%s is memory shared with another BO (key 0x%llx) that this process "
                             "has not recreated, and without criu's fdstore restored processes "
                             "cannot hand each other GPU memory",
                             what.c_str(), static_cast<unsigned long long>(key));
        int copy = ::fcntl(it->second, F_DUPFD_CLOEXEC, 0);
        if (copy < 0)
            return makeErrnoError(ErrorCode::Io, errno, "%s: cannot copy the fd of its memory",
                                  what.c_str());
        return copy;
    }

private:
    std::map<uint64_t, int> fds_;
};

} // namespace

Result<std::unique_ptr<ShareExchange>> makeTaskShareExchange(FdStore store, size_t capacity) {
    if (!store.add || !store.get || capacity == 0)
        return makeError(ErrorCode::InvalidArgument,
                         "the share exchange needs criu's fdstore and room for one key");
    size_t bytes = sizeof(Table) + (capacity - 1) * sizeof(Slot);
    // MAP_NORESERVE: only the pages of slots in use are ever touched.
    void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED)
        return makeErrnoError(ErrorCode::OutOfMemory, errno,
                              "cannot map the table of memory shared between restored processes");
    // Anonymous shared memory starts zeroed: every slot free, none used.
    return std::unique_ptr<ShareExchange>(
        new TaskShareExchange(std::move(store), static_cast<Table*>(mem), capacity, bytes));
}

std::unique_ptr<ShareExchange> makeLocalShareExchange() {
    return std::make_unique<LocalShareExchange>();
}

} // namespace coordination
