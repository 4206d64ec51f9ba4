#include "base/small_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace base {

std::optional<std::string> readSmallFile(const std::string& path, size_t limit) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return std::nullopt;
    std::string text;
    char block[4096];
    while (text.size() < limit) {
        ssize_t n = read(fd, block, std::min(sizeof block, limit - text.size()));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(fd);
            return std::nullopt;
        }
        if (n == 0)
            break;
        text.append(block, static_cast<size_t>(n));
    }
    close(fd);
    return text;
}

} // namespace base
