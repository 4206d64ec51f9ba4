#include "mockgpu/context.h"

#include "mockgpu/files.h"
#include "mockgpu/machine.h"
#include "mockgpu/state_codec.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

namespace mock {
const BufferObject* ContextState::findBo(uint32_t handle) const {
    for (const BufferObject& bo : bos)
        if (bo.handle == handle)
            return &bo;
    return nullptr;
}

Queue* ContextState::findQueue(uint32_t id) {
    for (Queue& q : queues)
        if (q.id == id)
            return &q;
    return nullptr;
}

Event* ContextState::findEvent(uint32_t id) {
    for (Event& e : events)
        if (e.id == id)
            return &e;
    return nullptr;
}

ContextLock::~ContextLock() {
    release();
}

base::Result<void> ContextLock::acquire(const std::string& dir, int timeoutMs) {
    release();
    std::string path = dir + "/busy";
    fd_ = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0)
        return base::makeErrnoError(base::ErrorCode::NotPresent, errno,
                                    "mock GPU context %s is gone", dir.c_str());
    for (int waited = 0;; ++waited) {
        if (flock(fd_, LOCK_EX | LOCK_NB) == 0)
            return base::success();
        if (errno != EWOULDBLOCK && errno != EINTR)
            break;
        if (waited >= timeoutMs) {
            errno = ETIMEDOUT;
            break;
        }
        usleep(1000);
    }
    int e = errno;
    release();
    return base::makeErrnoError(base::ErrorCode::Kernel, e,
                                "the lock of mock GPU context %s stayed taken for %d ms",
                                dir.c_str(), timeoutMs);
}

void ContextLock::release() {
    if (fd_ >= 0) {
        close(fd_); // closing drops the flock
        fd_ = -1;
    }
}

bool Context::pausedMarker() const {
    return access((dir_ + "/paused").c_str(), F_OK) == 0;
}

base::Result<void> Context::setPausedMarker(bool paused) const {
    std::string path = dir_ + "/paused";
    if (!paused) {
        if (unlink(path.c_str()) != 0 && errno != ENOENT)
            return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot remove %s",
                                        path.c_str());
        return base::success();
    }
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot create %s", path.c_str());
    close(fd);
    return base::success();
}

Context::Context(std::string root, uint32_t id)
    : root_(std::move(root)), id_(id),
      dir_(MachinePaths{root_}.contexts() + "/" + std::to_string(id)) {}

std::string Context::nodePath(int renderMinor) const {
    return dir_ + "/renderD" + std::to_string(renderMinor);
}

std::string Context::boPath(uint32_t handle) const {
    return dir_ + "/bo-" + std::to_string(handle) + ".data";
}

base::Result<ContextState> Context::load() const {
    HAL_TRY_ASSIGN(std::string bytes, readWholeFile(dir_ + "/state"));
    HAL_TRY_ASSIGN(ContextState state, decodeState(bytes, dir_ + "/state"));
    // The marker is the one truth (it can change without the lock, see criu_ops.cpp).
    state.paused = pausedMarker();
    return state;
}

base::Result<void> Context::save(const ContextState& state) const {
    return writeFileAtomic(dir_ + "/state", encodeState(state));
}

void Context::destroy() const {
    removeTree(dir_);
}

base::Result<void> Context::createBoData(uint32_t handle, uint64_t size) const {
    std::string path = boPath(handle);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot create %s", path.c_str());
    int rc = ftruncate(fd, static_cast<off_t>(size));
    int e = errno;
    close(fd);
    if (rc != 0)
        return base::makeErrnoError(base::ErrorCode::Io, e, "cannot size %s", path.c_str());
    return base::success();
}

namespace {

/// Moves `len` bytes between `buf` and the file at `path` from `offset` (pread or pwrite).
base::Result<void> transferBo(const std::string& path, uint64_t offset, std::byte* buf, size_t len,
                              bool write) {
    int fd = open(path.c_str(), (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot open %s", path.c_str());
    auto moved = transferBoAt(fd, offset, buf, len, write, path);
    close(fd);
    return moved;
}

} // namespace

base::Result<void> transferBoAt(int fd, uint64_t offset, std::byte* buf, size_t len, bool write,
                                const std::string& what) {
    // Writes of at most 1 MiB a call: larger ones into ext4's page cache ran several times slower
    // on the test machine (see kMaxWriteCall in formats/src/image_store.cpp).
    constexpr size_t kMaxWriteCall = 1 << 20;
    size_t done = 0;
    while (done < len) {
        off_t at = static_cast<off_t>(offset + done);
        ssize_t n = write ? pwrite(fd, buf + done, std::min(len - done, kMaxWriteCall), at)
                          : pread(fd, buf + done, len - done, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return base::makeErrnoError(base::ErrorCode::Io, n < 0 ? errno : EIO, "%s %s",
                                        write ? "writing" : "reading", what.c_str());
        done += static_cast<size_t>(n);
    }
    return base::success();
}

base::Result<int> Context::openBo(uint32_t handle, bool writable) const {
    std::string path = boPath(handle);
    int fd = open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        return base::makeErrnoError(
            errno == ENOENT ? base::ErrorCode::NotFound : base::ErrorCode::Io, errno,
            "cannot open BO %u of mock context %u (%s)", handle, id_, path.c_str());
    return fd;
}

base::Result<void> Context::linkBoData(uint32_t handle, int memoryFd) const {
    std::string path = boPath(handle);
    std::string from = "/proc/self/fd/" + std::to_string(memoryFd);
    if (linkat(AT_FDCWD, from.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) != 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno,
                                    "cannot make the memory of fd %d BO %u of mock context %u (%s)",
                                    memoryFd, handle, id_, path.c_str());
    return base::success();
}

base::Result<Context::BoMemory> Context::boMemory(uint32_t handle) const {
    std::string path = boPath(handle);
    struct stat st {};
    if (stat(path.c_str(), &st) != 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno,
                                    "cannot find the memory of BO %u of mock context %u (%s)",
                                    handle, id_, path.c_str());
    return BoMemory{static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_nlink)};
}

base::Result<void> Context::readBo(uint32_t handle, uint64_t offset,
                                   std::span<std::byte> out) const {
    return transferBo(boPath(handle), offset, out.data(), out.size(), false);
}

base::Result<void> Context::writeBo(uint32_t handle, uint64_t offset,
                                    std::span<const std::byte> in) const {
    return transferBo(boPath(handle), offset, const_cast<std::byte*>(in.data()), in.size(), true);
}

namespace {

constexpr const char* kUnfinishedPrefix = ".new-";

/// Parses ".new-<pid>-<session>-<n>"; false for any other name.
bool parseUnfinished(const char* name, long* pid, uint64_t* session) {
    size_t prefix = strlen(kUnfinishedPrefix);
    if (strncmp(name, kUnfinishedPrefix, prefix) != 0)
        return false;
    char* end = nullptr;
    *pid = strtol(name + prefix, &end, 10);
    if (*end != '-')
        return false;
    *session = strtoull(end + 1, &end, 10);
    return *end == '-';
}

} // namespace

base::Result<Context>
createContext(const std::string& root, dev_t rdev, int renderMinor, uint64_t session,
              const std::function<base::Result<void>(const Context&)>& build) {
    static std::atomic<unsigned> counter{0};
    std::string contexts = MachinePaths{root}.contexts();
    std::string hidden =
        base::strFormat("%s/%s%d-%llu-%u", contexts.c_str(), kUnfinishedPrefix, hostPid(),
                        static_cast<unsigned long long>(session), counter++);
    if (mkdir(hidden.c_str(), 0700) != 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot create context %s",
                                    hidden.c_str());
    Context staged(root, hidden);
    auto fail = [&](base::Error e) -> base::Result<Context> {
        removeTree(hidden);
        return e;
    };
    std::string node = staged.nodePath(renderMinor);
    if (mknod(node.c_str(), S_IFCHR | 0600, rdev) != 0)
        return fail(base::makeErrnoError(base::ErrorCode::Io, errno, "cannot create device node %s",
                                         node.c_str()));
    if (auto built = build(staged); !built.ok())
        return fail(std::move(built).error());
    HAL_TRY_ASSIGN(auto existing, listContexts(root));
    uint32_t next = 1;
    for (const Context& c : existing)
        next = std::max(next, c.id() + 1);
    for (int attempt = 0; attempt < 1000; ++attempt, ++next) {
        Context ctx(root, next);
        if (renameat2(AT_FDCWD, hidden.c_str(), AT_FDCWD, ctx.dir().c_str(), RENAME_NOREPLACE) == 0)
            return ctx;
        if (errno != EEXIST && errno != ENOTEMPTY)
            return fail(base::makeErrnoError(base::ErrorCode::Io, errno,
                                             "cannot publish context %s", ctx.dir().c_str()));
    }
    return fail(base::makeError(base::ErrorCode::Internal, "cannot allocate a context id in %s",
                                root.c_str()));
}

void removeUnfinishedContexts(const std::string& root, uint64_t session, bool checkCreators) {
    std::string contexts = MachinePaths{root}.contexts();
    DIR* d = opendir(contexts.c_str());
    if (!d)
        return;
    std::vector<std::string> doomed;
    while (struct dirent* e = readdir(d)) {
        long pid = 0;
        uint64_t of = 0;
        if (!parseUnfinished(e->d_name, &pid, &of))
            continue;
        bool creatorGone =
            checkCreators && pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
        if ((session && of == session) || creatorGone)
            doomed.push_back(contexts + "/" + e->d_name);
    }
    closedir(d);
    for (const std::string& dir : doomed)
        removeTree(dir);
}

base::Result<std::optional<BufferObject>> findBoByMemory(const std::string& root,
                                                         uint64_t memoryId) {
    HAL_TRY_ASSIGN(auto contexts, listContexts(root));
    std::optional<BufferObject> found;
    for (const Context& ctx : contexts) {
        auto s = ctx.load();
        if (!s.ok())
            continue; // removed while we looked
        for (const BufferObject& bo : s->bos) {
            auto memory = ctx.boMemory(bo.handle);
            if (!memory.ok() || memory->id != memoryId)
                continue;
            if (!bo.imported)
                return std::optional<BufferObject>(bo);
            if (!found)
                found = bo;
        }
    }
    return found;
}

base::Result<std::vector<Context>> listContexts(const std::string& root) {
    std::string dir = MachinePaths{root}.contexts();
    DIR* d = opendir(dir.c_str());
    if (!d)
        return base::makeErrnoError(base::ErrorCode::NotPresent, errno,
                                    "cannot list the contexts of mock machine %s", root.c_str());
    std::vector<Context> out;
    while (struct dirent* e = readdir(d)) {
        char* end = nullptr;
        unsigned long id = strtoul(e->d_name, &end, 10);
        if (id > 0 && *end == '\0')
            out.emplace_back(root, static_cast<uint32_t>(id));
    }
    closedir(d);
    std::sort(out.begin(), out.end(),
              [](const Context& a, const Context& b) { return a.id() < b.id(); });
    return out;
}

uint32_t contextIdOfNodePath(const std::string& root, const std::string& path) {
    std::string prefix = MachinePaths{root}.contexts() + "/";
    if (path.compare(0, prefix.size(), prefix) != 0)
        return 0;
    std::string rest = path.substr(prefix.size());
    size_t slash = rest.find('/');
    if (slash == std::string::npos || rest.compare(slash + 1, 7, "renderD") != 0)
        return 0;
    char* end = nullptr;
    unsigned long id = strtoul(rest.c_str(), &end, 10);
    if (end != rest.c_str() + slash)
        return 0;
    return static_cast<uint32_t>(id);
}

} // namespace mock
