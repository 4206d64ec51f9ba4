#include "base/trusted_path.h"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace base {

Result<std::string> readTrustedFile(const TrustedPath& file, size_t limit) {
    if (file.isNullDevice())
        return std::string();
    // The magic link opens the object the O_PATH fd holds, whatever its name now names.
    int fd = open(file.procPath().c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "cannot open '%s' for reading",
                              file.resolved().c_str());
    std::string content;
    char buf[16384];
    while (content.size() <= limit) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            close(fd);
            return makeErrnoError(ErrorCode::Io, err, "cannot read '%s'", file.resolved().c_str());
        }
        if (n == 0)
            break;
        content.append(buf, size_t(n));
    }
    close(fd);
    if (content.size() > limit + 1)
        content.resize(limit + 1);
    return content;
}

} // namespace base
