#include "context.h"

#include "files.h"
#include "machine.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>

namespace mock {
namespace {

constexpr const char* kStateMagic = "mockgpu-context 1";

} // namespace

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

std::string encodeState(const ContextState& s) {
    std::ostringstream out;
    out << kStateMagic << "\n"
        << "gpu_id " << s.gpuId << "\n"
        << "user_gpu_id " << s.userGpuId << "\n"
        << "render_minor " << s.renderMinor << "\n"
        << "owner_pid " << s.ownerPid << "\n"
        << "restore_session " << s.restoreSession << "\n"
        << "paused " << (s.paused ? 1 : 0) << "\n"
        << "next_handle " << s.nextHandle << "\n"
        << "next_queue " << s.nextQueue << "\n"
        << "next_event " << s.nextEvent << "\n";
    for (const BufferObject& bo : s.bos)
        out << "bo " << bo.handle << " " << bo.size << " " << bo.gpuVa << " " << bo.flags << "\n";
    for (const Queue& q : s.queues)
        out << "queue " << q.id << " " << q.submitted << " " << q.completed << "\n";
    for (const Event& e : s.events)
        out << "event " << e.id << " " << e.signals << "\n";
    return out.str();
}

hal::Result<ContextState> decodeState(const std::string& text, const std::string& what) {
    std::istringstream lines(text);
    std::string line;
    if (!std::getline(lines, line) || line != kStateMagic)
        return hal::makeError(hal::ErrorCode::Image, "%s: not a mock GPU context state",
                              what.c_str());
    ContextState s;
    int lineNo = 1;
    while (std::getline(lines, line)) {
        ++lineNo;
        if (line.empty())
            continue;
        std::istringstream w(line);
        std::string key;
        w >> key;
        bool ok = true;
        if (key == "gpu_id")
            ok = static_cast<bool>(w >> s.gpuId);
        else if (key == "user_gpu_id")
            ok = static_cast<bool>(w >> s.userGpuId);
        else if (key == "render_minor")
            ok = static_cast<bool>(w >> s.renderMinor);
        else if (key == "owner_pid")
            ok = static_cast<bool>(w >> s.ownerPid);
        else if (key == "restore_session")
            ok = static_cast<bool>(w >> s.restoreSession);
        else if (key == "paused") {
            int p = 0;
            ok = static_cast<bool>(w >> p);
            s.paused = p != 0;
        } else if (key == "next_handle")
            ok = static_cast<bool>(w >> s.nextHandle);
        else if (key == "next_queue")
            ok = static_cast<bool>(w >> s.nextQueue);
        else if (key == "next_event")
            ok = static_cast<bool>(w >> s.nextEvent);
        else if (key == "bo") {
            BufferObject bo;
            ok = static_cast<bool>(w >> bo.handle >> bo.size >> bo.gpuVa >> bo.flags);
            s.bos.push_back(bo);
        } else if (key == "queue") {
            Queue q;
            ok = static_cast<bool>(w >> q.id >> q.submitted >> q.completed);
            s.queues.push_back(q);
        } else if (key == "event") {
            Event e;
            ok = static_cast<bool>(w >> e.id >> e.signals);
            s.events.push_back(e);
        } else {
            ok = false;
        }
        if (!ok)
            return hal::makeError(hal::ErrorCode::Image, "%s:%d: cannot parse '%s'",
                                  what.c_str(), lineNo, line.c_str());
    }
    return s;
}

ContextLock::~ContextLock() { release(); }

hal::Result<void> ContextLock::acquire(const std::string& dir, int timeoutMs) {
    release();
    std::string path = dir + "/busy";
    fd_ = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0)
        return hal::makeErrnoError(hal::ErrorCode::NotPresent, errno,
                                   "mock GPU context %s is gone", dir.c_str());
    for (int waited = 0;; ++waited) {
        if (flock(fd_, LOCK_EX | LOCK_NB) == 0)
            return hal::success();
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
    return hal::makeErrnoError(hal::ErrorCode::Kernel, e,
                               "the lock of mock GPU context %s stayed taken for %d ms",
                               dir.c_str(), timeoutMs);
}

void ContextLock::release() {
    if (fd_ >= 0) {
        close(fd_); // closing drops the flock
        fd_ = -1;
    }
}

bool Context::pausedMarker() const { return access((dir_ + "/paused").c_str(), F_OK) == 0; }

hal::Result<void> Context::setPausedMarker(bool paused) const {
    std::string path = dir_ + "/paused";
    if (!paused) {
        if (unlink(path.c_str()) != 0 && errno != ENOENT)
            return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot remove %s",
                                       path.c_str());
        return hal::success();
    }
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot create %s", path.c_str());
    close(fd);
    return hal::success();
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

hal::Result<void> Context::create(dev_t rdev, int renderMinor) {
    if (mkdir(dir_.c_str(), 0700) != 0)
        return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot create context %s",
                                   dir_.c_str());
    std::string node = nodePath(renderMinor);
    if (mknod(node.c_str(), S_IFCHR | 0600, rdev) != 0) {
        int e = errno;
        destroy();
        return hal::makeErrnoError(hal::ErrorCode::Io, e, "cannot create device node %s",
                                   node.c_str());
    }
    return hal::success();
}

hal::Result<ContextState> Context::load() const {
    HAL_TRY_ASSIGN(std::string text, readWholeFile(dir_ + "/state"));
    HAL_TRY_ASSIGN(ContextState state, decodeState(text, dir_ + "/state"));
    // The marker is the one truth (it can change without the lock, see criu_ops.cpp).
    state.paused = pausedMarker();
    return state;
}

hal::Result<void> Context::save(const ContextState& state) const {
    return writeFileAtomic(dir_ + "/state", encodeState(state));
}

void Context::destroy() const { removeTree(dir_); }

hal::Result<void> Context::createBoData(uint32_t handle, uint64_t size) const {
    std::string path = boPath(handle);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot create %s", path.c_str());
    int rc = ftruncate(fd, static_cast<off_t>(size));
    int e = errno;
    close(fd);
    if (rc != 0)
        return hal::makeErrnoError(hal::ErrorCode::Io, e, "cannot size %s", path.c_str());
    return hal::success();
}

namespace {

/// Moves `len` bytes between `buf` and the file at `path` from `offset` (pread or pwrite).
hal::Result<void> transferBo(const std::string& path, uint64_t offset, std::byte* buf, size_t len,
                             bool write) {
    int fd = open(path.c_str(), (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot open %s", path.c_str());
    auto moved = transferBoAt(fd, offset, buf, len, write, path);
    close(fd);
    return moved;
}

} // namespace

hal::Result<void> transferBoAt(int fd, uint64_t offset, std::byte* buf, size_t len, bool write,
                               const std::string& what) {
    // Writes of at most 1 MiB a call: larger ones into ext4's page cache ran several times slower
    // on the test machine (see kMaxWriteCall in hal/src/image_store.cpp).
    constexpr size_t kMaxWriteCall = 1 << 20;
    size_t done = 0;
    while (done < len) {
        off_t at = static_cast<off_t>(offset + done);
        ssize_t n = write ? pwrite(fd, buf + done, std::min(len - done, kMaxWriteCall), at)
                          : pread(fd, buf + done, len - done, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return hal::makeErrnoError(hal::ErrorCode::Io, n < 0 ? errno : EIO, "%s %s",
                                       write ? "writing" : "reading", what.c_str());
        done += static_cast<size_t>(n);
    }
    return hal::success();
}

hal::Result<int> Context::openBo(uint32_t handle, bool writable) const {
    std::string path = boPath(handle);
    int fd = open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        return hal::makeErrnoError(errno == ENOENT ? hal::ErrorCode::NotFound : hal::ErrorCode::Io,
                                   errno, "cannot open BO %u of mock context %u (%s)", handle,
                                   id_, path.c_str());
    return fd;
}

hal::Result<void> Context::readBo(uint32_t handle, uint64_t offset,
                                  std::span<std::byte> out) const {
    return transferBo(boPath(handle), offset, out.data(), out.size(), false);
}

hal::Result<void> Context::writeBo(uint32_t handle, uint64_t offset,
                                   std::span<const std::byte> in) const {
    return transferBo(boPath(handle), offset, const_cast<std::byte*>(in.data()), in.size(), true);
}

hal::Result<Context> createContext(const std::string& root, dev_t rdev, int renderMinor) {
    HAL_TRY_ASSIGN(auto existing, listContexts(root));
    uint32_t next = 1;
    for (const Context& c : existing)
        next = std::max(next, c.id() + 1);
    for (int attempt = 0; attempt < 1000; ++attempt, ++next) {
        Context ctx(root, next);
        auto created = ctx.create(rdev, renderMinor);
        if (created.ok())
            return ctx;
        if (created.error().sysErrno() != EEXIST)
            return std::move(created).error();
    }
    return hal::makeError(hal::ErrorCode::Internal, "cannot allocate a context id in %s",
                          root.c_str());
}

hal::Result<std::vector<Context>> listContexts(const std::string& root) {
    std::string dir = MachinePaths{root}.contexts();
    DIR* d = opendir(dir.c_str());
    if (!d)
        return hal::makeErrnoError(hal::ErrorCode::NotPresent, errno,
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
