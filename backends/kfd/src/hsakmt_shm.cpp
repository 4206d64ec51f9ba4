#include "kfd/hsakmt_shm.h"

#include <fcntl.h>
#include <semaphore.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

hal::Result<void> createSemaphore(const std::string& dir) {
    std::string path = dir + "/" + kHsakmtSemName;
    if (access(path.c_str(), F_OK) == 0)
        return hal::success();
    // What sem_open(O_CREAT) does: initialise a sem_t in a temporary file, then link it in place
    // so no process ever sees a half-made semaphore.
    std::string tmp = dir + "/.sem.hsakmt_semaphore.XXXXXX";
    Fd fd{mkstemp(tmp.data())};
    if (fd.fd < 0)
        return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot create %s", tmp.c_str());
    sem_t sem;
    memset(&sem, 0, sizeof(sem));
    if (sem_init(&sem, 1, 1) != 0 || write(fd.fd, &sem, sizeof(sem)) != sizeof(sem) ||
        fchmod(fd.fd, 0666) != 0) {
        int err = errno;
        unlink(tmp.c_str());
        return hal::makeErrnoError(hal::ErrorCode::Io, err, "cannot initialise %s", path.c_str());
    }
    int r = link(tmp.c_str(), path.c_str());
    int err = errno;
    unlink(tmp.c_str());
    if (r != 0 && err != EEXIST)
        return hal::makeErrnoError(hal::ErrorCode::Io, err, "cannot create %s", path.c_str());
    return hal::success();
}

} // namespace

hal::Result<std::optional<HsakmtShm>> readHsakmtShm(const std::string& dir) {
    std::string path = dir + "/" + kHsakmtShmName;
    Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
    if (fd.fd < 0) {
        if (errno == ENOENT)
            return std::optional<HsakmtShm>();
        return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot open %s", path.c_str());
    }
    struct stat st;
    if (fstat(fd.fd, &st) != 0)
        return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot stat %s", path.c_str());
    HsakmtShm shm;
    shm.size = static_cast<uint64_t>(st.st_size);
    if (shm.size >= sizeof(shm.magic) && pread(fd.fd, &shm.magic, sizeof(shm.magic), 0) !=
                                             static_cast<ssize_t>(sizeof(shm.magic)))
        return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot read %s", path.c_str());
    return std::optional<HsakmtShm>(shm);
}

hal::Result<void> restoreHsakmtShm(const std::string& dir, const HsakmtShm& shm) {
    if (shm.size == 0)
        return hal::success();
    std::string path = dir + "/" + kHsakmtShmName;
    Fd fd{::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666)};
    if (fd.fd < 0)
        return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot create %s", path.c_str());
    struct stat st;
    if (fstat(fd.fd, &st) != 0)
        return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot stat %s", path.c_str());
    if (static_cast<uint64_t>(st.st_size) != shm.size) {
        if (ftruncate(fd.fd, static_cast<off_t>(shm.size)) != 0)
            return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot size %s to %llu bytes",
                                       path.c_str(), static_cast<unsigned long long>(shm.size));
        if (shm.size >= sizeof(shm.magic) &&
            pwrite(fd.fd, &shm.magic, sizeof(shm.magic), 0) != sizeof(shm.magic))
            return hal::makeErrnoError(hal::ErrorCode::Io, errno, "cannot write %s", path.c_str());
    }
    return createSemaphore(dir);
}

} // namespace kfd
