#include "proc_fd.h"

#include <unistd.h>

#include <cstdio>

namespace frontend {

std::string fdPath(int fd) {
    char link[64], buf[4096];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, sizeof(buf) - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

} // namespace frontend
