#include "config/sources.h"

#include "base/trusted_path.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace config {
namespace {

hal::Error readError(int err, const char* what, const std::string& path) {
    return hal::makeErrnoError(hal::ErrorCode::Config, err, "cannot read %s %s", what,
                               path.c_str());
}

} // namespace

// Reading a configuration file must end, and soon: it runs inside criu at every dump and restore.
// So a FIFO or socket is refused (opening it must not wait for a writer: O_NONBLOCK), and at most
// kMaxConfigFileBytes are read from anything else (a device such as /dev/zero never ends).
// criu runs as root with what the file says: it must be root's (or the caller's) and writable by
// no one else, every directory above it too (base/trusted_path.h).
hal::Result<bool> readTextFile(const std::string& path, bool mustExist, const char* what,
                               const char* option, std::string* text) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT && !mustExist)
            return false;
        return readError(err, what, path);
    }
    struct stat st;
    int statErr = fstat(fd, &st) == 0 ? 0 : errno;
    if (statErr || S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
        close(fd);
        if (statErr || S_ISDIR(st.st_mode))
            return readError(statErr ? statErr : EISDIR, what, path);
        return hal::makeError(hal::ErrorCode::Config,
                              "cannot read %s %s: it is a %s, not a file; name a regular file",
                              what, path.c_str(), S_ISFIFO(st.st_mode) ? "FIFO" : "socket");
    }
    if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) { // /dev/null: empty, by convention
        close(fd);
        text->clear();
        return true;
    }
    if (auto trusted = hal::checkTrustedPath(path, option, hal::TrustedKind::File); !trusted.ok()) {
        close(fd);
        return std::move(trusted).error();
    }
    std::string content;
    char buf[16384];
    while (content.size() <= kMaxConfigFileBytes) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            close(fd);
            return readError(err, what, path);
        }
        if (n == 0)
            break;
        content.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    if (content.size() > kMaxConfigFileBytes)
        return hal::makeError(hal::ErrorCode::Config,
                              "cannot read %s %s: it is larger than %zu bytes, which no "
                              "configuration file needs",
                              what, path.c_str(), kMaxConfigFileBytes);
    *text = std::move(content);
    return true;
}

} // namespace config
