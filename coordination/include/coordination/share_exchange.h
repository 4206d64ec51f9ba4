#pragma once
/// \file
/// GPU memory shared between processes, at restore. criu restores every task in a process of its
/// own (forks of criu's main process), so the task that recreates a shared BO (the owner of its
/// share key, see formats::BoSharing) publishes an fd of it (a dma-buf, or the mock GPU's
/// equivalent), and the tasks that import the same memory fetch that fd, waiting until the owner
/// has published it. Tasks restore their files at the same time, so an importer waits only for
/// its owner's RESTORE_EXT_FILE.
///
/// Between tasks, the fds travel through criu's fdstore (a store of fds that criu's main process
/// and every restored task share; criu's own restore passes fds between tasks through it), and
/// which fdstore entry holds which key is kept in a table of memory shared by all of them: a
/// MAP_SHARED mapping made in criu's main process before it forks, inherited by every task, and
/// kept until criu replaces a task's memory with the checkpointed one, after its files are
/// restored.

#include "base/result.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace coordination {

using base::Result;

/// criu's fdstore as the exchange uses it (fdstore_add and fdstore_get of criu's plugin API).
struct FdStore {
    std::function<int(int fd)> add; ///< keeps a copy of `fd`; its id (>= 0), or < 0
    std::function<int(int id)> get; ///< a new fd of entry `id`, or < 0
};

/// How long an importer waits for the owner of its memory by default: the owner's task restores
/// its files at the same time, so this is reached only when the owner is not restoring at all.
inline constexpr std::chrono::milliseconds kShareFetchTimeout{120000};

/// Where restored tasks hand each other the memory they share.
class ShareExchange {
public:
    virtual ~ShareExchange() = default;
    /// Makes `fd` (the caller keeps its own) the memory of `key` for this restore. A key
    /// published twice keeps its first fd.
    virtual Result<void> publish(uint64_t key, int fd) = 0;
    /// A new fd of the memory of `key`, waiting at most `timeout` for it to be published; `what`
    /// names the BO in errors.
    virtual Result<int> fetch(uint64_t key, std::chrono::milliseconds timeout,
                              const std::string& what) = 0;
};

/// The exchange among the tasks of one restore (see the file comment), made in criu's main
/// process before it forks; at most `capacity` keys.
Result<std::unique_ptr<ShareExchange>> makeTaskShareExchange(FdStore store,
                                                             size_t capacity = 1 << 16);

/// An exchange within one process, for hosts without an fdstore (tools, tests, a criu that does
/// not export one): fetch answers at once, from what this process published.
std::unique_ptr<ShareExchange> makeLocalShareExchange();

} // namespace coordination
