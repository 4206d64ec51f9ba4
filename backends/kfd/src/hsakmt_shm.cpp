#include "kfd/hsakmt_shm.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kfd {
namespace {

struct Fd {
    int fd;
    ~Fd() {
        if (fd >= 0)
            ::close(fd);
    }
};

constexpr int kSafeFlags = O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;

// Checks what opening `path` gave (`out->fd`, else errno): a regular file, not a symlink. fd -1
// with no error: it does not exist (and `flags` has no O_CREAT).
base::Result<void> checkRegular(const std::string& path, int flags, Fd* out);

// Opens `path` without following a symlink and without waiting on a FIFO, and checks that it is
// a regular file. fd -1 with no error: it does not exist (and `flags` has no O_CREAT).
base::Result<void> openRegular(const std::string& path, int flags, Fd* out) {
    out->fd = ::open(path.c_str(), flags | kSafeFlags, 0666);
    return checkRegular(path, flags, out);
}

base::Result<void> checkRegular(const std::string& path, int flags, Fd* out) {
    if (out->fd < 0) {
        if (errno == ENOENT && !(flags & O_CREAT))
            return base::success();
        if (errno == ELOOP)
            return base::makeError(base::ErrorCode::Io,
                                   "%s is a symbolic link; libhsakmt's shared memory must be a "
                                   "regular file (remove the link)",
                                   path.c_str());
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot open %s", path.c_str());
    }
    struct stat st;
    if (fstat(out->fd, &st) != 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot stat %s", path.c_str());
    if (!S_ISREG(st.st_mode))
        return base::makeError(base::ErrorCode::Io,
                               "%s is not a regular file (mode %o); libhsakmt's shared memory "
                               "must be one (remove it)",
                               path.c_str(), static_cast<unsigned>(st.st_mode & S_IFMT));
    return base::success();
}

base::Result<void> createSemaphore(const std::string& dir) {
    std::string path = dir + "/" + kHsakmtSemName;
    struct stat st;
    if (lstat(path.c_str(), &st) == 0) {
        if (!S_ISREG(st.st_mode))
            return base::makeError(base::ErrorCode::Io,
                                   "%s is not a regular file; libhsakmt's semaphore must be one "
                                   "(remove it)",
                                   path.c_str());
        return base::success();
    }
    // What sem_open(O_CREAT) does: initialise a sem_t in a temporary file, then link it in place
    // so no process ever sees a half-made semaphore.
    std::string tmp = dir + "/.sem.hsakmt_semaphore.XXXXXX";
    Fd fd{mkstemp(tmp.data())};
    if (fd.fd < 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot create %s", tmp.c_str());
    sem_t sem;
    memset(&sem, 0, sizeof(sem));
    if (sem_init(&sem, 1, 1) != 0 || write(fd.fd, &sem, sizeof(sem)) != sizeof(sem) ||
        fchmod(fd.fd, 0666) != 0) {
        int err = errno;
        unlink(tmp.c_str());
        return base::makeErrnoError(base::ErrorCode::Io, err, "cannot initialise %s", path.c_str());
    }
    int r = link(tmp.c_str(), path.c_str());
    int err = errno;
    unlink(tmp.c_str());
    if (r != 0 && err != EEXIST)
        return base::makeErrnoError(base::ErrorCode::Io, err, "cannot create %s", path.c_str());
    return base::success();
}

} // namespace

namespace {

/// The size and magic of the segment open in `fd` (-1: there is none), `path` for messages.
base::Result<std::optional<HsakmtShm>> segmentOf(const Fd& fd, const std::string& path) {
    if (fd.fd < 0)
        return std::optional<HsakmtShm>();
    struct stat st;
    if (fstat(fd.fd, &st) != 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot stat %s", path.c_str());
    HsakmtShm shm;
    shm.size = static_cast<uint64_t>(st.st_size);
    if (shm.size >= sizeof(shm.magic) &&
        pread(fd.fd, &shm.magic, sizeof(shm.magic), 0) != static_cast<ssize_t>(sizeof(shm.magic)))
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot read %s", path.c_str());
    return std::optional<HsakmtShm>(shm);
}

/// Without openat2: /dev/shm/hsakmt_shared_mem of the root `rootFd`, a component at a time with
/// O_NOFOLLOW, so that no link is resolved (an absolute one would resolve on the host) and no
/// driver is called (the directories O_PATH, the segment as openRegular does); a link on the way
/// is refused. False when a component does not exist; else `out` holds the segment's open
/// (`path` names it in messages).
base::Result<bool> openWithoutLinks(int rootFd, const std::string& path, Fd* out) {
    const char* dirs[] = {"dev", "shm"};
    Fd at{-1};
    for (const char* name : dirs) {
        int next =
            openat(at.fd < 0 ? rootFd : at.fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT)
            return false;
        if (next < 0 && (errno == ENOTDIR || errno == ELOOP))
            return base::makeError(base::ErrorCode::Io,
                                   "%s: the process's /%s on the way is a symbolic link or not a "
                                   "directory; without openat2 (refused here) no link is followed, "
                                   "so libhsakmt's shared memory cannot be read",
                                   path.c_str(), name);
        if (next < 0)
            return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot open %s (at /%s)",
                                        path.c_str(), name);
        if (at.fd >= 0)
            ::close(at.fd);
        at.fd = next;
    }
    out->fd = openat(at.fd, kHsakmtShmName, O_RDONLY | kSafeFlags);
    if (out->fd < 0 && errno == ENOENT)
        return false;
    return true;
}

} // namespace

bool hsakmtShmWithoutOpenat2 = false;

base::Result<std::optional<HsakmtShm>> readHsakmtShm(const std::string& dir) {
    std::string path = dir + "/" + kHsakmtShmName;
    Fd fd{-1};
    HAL_TRY(openRegular(path, O_RDONLY, &fd));
    return segmentOf(fd, path);
}

std::string processShmDir(const std::string& procRoot, int pid) {
    return procRoot + "/" + std::to_string(pid) + "/root" + kDefaultShmDir;
}

base::Result<std::optional<HsakmtShm>> readProcessHsakmtShm(const std::string& procRoot, int pid) {
    std::string root = procRoot + "/" + std::to_string(pid) + "/root";
    std::string path = processShmDir(procRoot, pid) + "/" + kHsakmtShmName;
    Fd rootFd{::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC)};
    if (rootFd.fd < 0 && errno == ENOENT)
        return std::optional<HsakmtShm>(); // no such process: nothing of it to record
    if (rootFd.fd < 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno,
                                    "cannot open the root directory of process %d (%s)", pid,
                                    root.c_str());
    // Resolved as the process sees it: its /dev/shm, its links taken within its root.
    struct open_how how {};
    how.flags = O_RDONLY | kSafeFlags;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    std::string inRoot = std::string(kDefaultShmDir + 1) + "/" + kHsakmtShmName;
    Fd fd{hsakmtShmWithoutOpenat2 ? -1
                                  : static_cast<int>(syscall(SYS_openat2, rootFd.fd, inRoot.c_str(),
                                                             &how, sizeof how))};
    if (hsakmtShmWithoutOpenat2)
        errno = ENOSYS;
    if (fd.fd < 0 && (errno == ENOSYS || errno == EPERM)) { // no openat2 (or a filter refuses it)
        HAL_TRY_ASSIGN(bool found, openWithoutLinks(rootFd.fd, path, &fd));
        if (!found)
            return std::optional<HsakmtShm>();
    }
    HAL_TRY(checkRegular(path, O_RDONLY, &fd));
    return segmentOf(fd, path);
}

base::Result<void> restoreHsakmtShm(const std::string& dir, const HsakmtShm& shm) {
    if (shm.size == 0)
        return base::success();
    std::string path = dir + "/" + kHsakmtShmName;
    if (shm.size > kMaxHsakmtShmSize)
        return base::makeError(base::ErrorCode::Image,
                               "the image records libhsakmt's shared memory %s as %llu bytes, more "
                               "than the %llu it may have (libhsakmt's is 8 bytes): the image is "
                               "corrupt",
                               path.c_str(), static_cast<unsigned long long>(shm.size),
                               static_cast<unsigned long long>(kMaxHsakmtShmSize));
    Fd fd{-1};
    HAL_TRY(openRegular(path, O_RDWR | O_CREAT, &fd));
    struct stat st;
    if (fstat(fd.fd, &st) != 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot stat %s", path.c_str());
    if (static_cast<uint64_t>(st.st_size) != shm.size) {
        if (ftruncate(fd.fd, static_cast<off_t>(shm.size)) != 0)
            return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot size %s to %llu bytes",
                                        path.c_str(), static_cast<unsigned long long>(shm.size));
        if (shm.size >= sizeof(shm.magic) &&
            pwrite(fd.fd, &shm.magic, sizeof(shm.magic), 0) != sizeof(shm.magic))
            return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot write %s",
                                        path.c_str());
    }
    return createSemaphore(dir);
}

} // namespace kfd
