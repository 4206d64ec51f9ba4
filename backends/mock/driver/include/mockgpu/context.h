#pragma once
/// \file
/// One open mock device (a driver "file"): its state, its buffer objects, queues and events, kept
/// in ROOT/state/contexts/<id>/ outside any process.

#include "base/result.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mock {

/// A buffer object: GPU memory with flags and a GPU virtual address.
struct BufferObject {
    uint32_t handle = 0;
    uint64_t size = 0;
    uint64_t gpuVa = 0;
    uint32_t flags = 0; ///< kfd-style alloc flags (VRAM 1, GTT 2, ...)
    /// The memory of a BO of another context (or of this one), imported through its dma-buf:
    /// the data file is the same file, and the memory counts against the exporter's budget.
    bool imported = false;
};

/// A compute queue: commands submitted and completed.
struct Queue {
    uint32_t id = 0;
    uint64_t submitted = 0;
    uint64_t completed = 0;
};

/// An event: how many times it was signalled.
struct Event {
    uint32_t id = 0;
    uint64_t signals = 0;
};

/// A restore session id for criu process `criuPid`: the pid in the upper 32 bits, `salt` (what
/// tells restores of one pid apart) in the lower ones.
inline uint64_t restoreSessionOf(int criuPid, uint32_t salt) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(criuPid)) << 32) | salt;
}
/// The pid of the criu that runs restore `session` (as that criu's /proc numbers it).
inline int restoringCriuOf(uint64_t session) {
    return static_cast<int>(session >> 32);
}

/// The state of one context.
struct ContextState {
    uint32_t gpuId = 0;     ///< the GPU the context lives on
    uint32_t userGpuId = 0; ///< the gpu_id the process sees (kept across restores)
    int renderMinor = -1;
    int ownerPid = 0; ///< host pid of the process that opened (or was restored with) it
    /// The device directory the process opened the GPU through, as it sees it (`--dev-dir`,
    /// device_nodes.h); empty when it did not name one. A restore maps onto the GPUs whose nodes
    /// the restored process sees there.
    std::string devDir;
    /// Nonzero while a restore that has not resumed it yet owns it: that restore's session id
    /// (so a failed restore can find and remove what its tasks recreated). Its upper 32 bits are
    /// the pid of the restoring criu (restoreSessionOf, restoringCriuOf).
    uint64_t restoreSession = 0;
    /// Queues stopped by a checkpoint or a restore not yet resumed. Context::load() takes it from
    /// the `paused` marker, which is what the driver obeys.
    bool paused = false;
    uint32_t nextHandle = 1;
    uint32_t nextQueue = 1;
    uint32_t nextEvent = 1;
    std::vector<BufferObject> bos;
    std::vector<Queue> queues;
    std::vector<Event> events;

    const BufferObject* findBo(uint32_t handle) const;
    Queue* findQueue(uint32_t id);
    Event* findEvent(uint32_t id);
};

/// The context's driver lock (flock on ROOT/state/contexts/<id>/busy), held for the whole of one
/// driver call by a process or by a checkpoint operation. While a process holds it, it has the
/// busy file open: a checkpoint that finds that fd in a stopped task knows the task is inside the
/// driver.
class ContextLock {
public:
    ContextLock() = default;
    ~ContextLock();
    ContextLock(const ContextLock&) = delete;
    ContextLock& operator=(const ContextLock&) = delete;

    /// Takes the lock of the context in `dir`, waiting at most `timeoutMs`.
    base::Result<void> acquire(const std::string& dir, int timeoutMs);
    /// Releases it (also done by the destructor).
    void release();

private:
    int fd_ = -1;
};

/// A context directory.
class Context {
public:
    /// `dir` is ROOT/state/contexts/<id>.
    Context(std::string root, uint32_t id);

    uint32_t id() const { return id_; }
    const std::string& dir() const { return dir_; }
    /// Path of the device node a process holds open.
    std::string nodePath(int renderMinor) const;

    /// Loads the state.
    base::Result<ContextState> load() const;
    /// Saves the state atomically.
    base::Result<void> save(const ContextState& state) const;
    /// Removes the directory and everything in it.
    void destroy() const;
    /// Whether the queues are paused: the `paused` marker exists (checked without opening a file,
    /// so a process waiting for its queues holds no fd of the driver).
    bool pausedMarker() const;
    /// Creates or removes the `paused` marker.
    base::Result<void> setPausedMarker(bool paused) const;

    /// Creates the data file of a BO (sparse, `size` bytes).
    base::Result<void> createBoData(uint32_t handle, uint64_t size) const;
    /// Reads/writes BO bytes at an offset; ranges are checked against the BO size by callers.
    base::Result<void> readBo(uint32_t handle, uint64_t offset, std::span<std::byte> out) const;
    base::Result<void> writeBo(uint32_t handle, uint64_t offset,
                               std::span<const std::byte> in) const;
    /// An fd of BO `handle`'s memory (close-on-exec): what a dma-buf export gives a real driver's
    /// user. Bytes read or written through it reach the BO from any process that holds it.
    base::Result<int> openBo(uint32_t handle, bool writable) const;
    /// Makes the memory behind `memoryFd` (an fd openBo gave, in any process) the data of BO
    /// `handle`: one memory, freed when its last holder is.
    base::Result<void> linkBoData(uint32_t handle, int memoryFd) const;
    /// The memory of a BO: its identity (the inode of its data file: the same for every BO that
    /// shares it, in any context) and how many BOs hold it.
    struct BoMemory {
        uint64_t id = 0;
        uint64_t holders = 0;
    };
    /// The memory of BO `handle`.
    base::Result<BoMemory> boMemory(uint32_t handle) const;

private:
    /// A context being built in the hidden directory `dir` (see createContext).
    Context(std::string root, std::string dir)
        : root_(std::move(root)), id_(0), dir_(std::move(dir)) {}
    friend base::Result<Context>
    createContext(const std::string&, dev_t, int, uint64_t,
                  const std::function<base::Result<void>(const Context&)>&);
    std::string boPath(uint32_t handle) const;

    std::string root_;
    uint32_t id_;
    std::string dir_;
};

/// Moves `len` bytes between `buf` and the BO memory behind `fd` at `offset` (pread or pwrite);
/// `what` names the BO in errors.
base::Result<void> transferBoAt(int fd, uint64_t offset, std::byte* buf, size_t len, bool write,
                                const std::string& what);

/// Creates a context: its directory and node (mknod) are made under a hidden name, `build` fills
/// them (state, markers, BO data; a lock taken there stays held), and only then does the context
/// appear under a fresh id (rename without replace), so no other process ever sees it half made.
/// On failure nothing is left. A creator that dies before the rename leaves its hidden directory,
/// named after its host pid and `session`: removeUnfinishedContexts removes those.
base::Result<Context> createContext(const std::string& root, dev_t rdev, int renderMinor,
                                    uint64_t session,
                                    const std::function<base::Result<void>(const Context&)>& build);

/// Removes the hidden directories of contexts whose creation never finished: those of restore
/// `session` (0: none), and those of creators that are no longer alive when `checkCreators`
/// (host pids: only from the initial pid namespace).
void removeUnfinishedContexts(const std::string& root, uint64_t session, bool checkCreators);

/// The BO whose memory is `memoryId` (Context::boMemory), in any context of the machine, the
/// exporter's record before the imports' when there is one; nullopt when no BO has it.
base::Result<std::optional<BufferObject>> findBoByMemory(const std::string& root,
                                                         uint64_t memoryId);

/// Every context of a machine, by id.
base::Result<std::vector<Context>> listContexts(const std::string& root);

/// The context an fd path (readlink of /proc/.../fd/N) refers to, if it is a mock node of
/// `root`; std::nullopt-like: returns id 0 when not.
uint32_t contextIdOfNodePath(const std::string& root, const std::string& path);

} // namespace mock
