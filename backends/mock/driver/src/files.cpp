#include "mockgpu/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

namespace mock {

base::Result<std::string> readWholeFile(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return base::makeErrnoError(errno == ENOENT ? base::ErrorCode::NotFound
                                                    : base::ErrorCode::Io,
                                    errno, "cannot read %s", path.c_str());
    std::string out;
    char buf[8192];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            return base::makeErrnoError(base::ErrorCode::Io, e, "cannot read %s", path.c_str());
        }
        if (n == 0)
            break;
        out.append(buf, static_cast<size_t>(n));
    }
    close(fd);
    return out;
}

base::Result<void> writeFileAtomic(const std::string& path, const std::string& text) {
    std::string tmp = path + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot write %s", tmp.c_str());
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp.c_str());
            return base::makeErrnoError(base::ErrorCode::Io, e, "cannot write %s", tmp.c_str());
        }
        done += static_cast<size_t>(n);
    }
    close(fd);
    if (rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        unlink(tmp.c_str());
        return base::makeErrnoError(base::ErrorCode::Io, e, "cannot replace %s", path.c_str());
    }
    return base::success();
}

void removeTree(const std::string& path) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
}

base::Result<void> makeDirs(const std::string& path) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec)
        return base::makeError(base::ErrorCode::Io, "cannot create directory %s: %s", path.c_str(),
                               ec.message().c_str());
    return base::success();
}

} // namespace mock
