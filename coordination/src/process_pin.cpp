#include "coordination/process_pin.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace coordination {

int openProcessPin(int pid) {
    int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    return fd < 0 ? -errno : fd;
}

bool pinnedProcessAlive(int pidfd) {
    if (pidfd < 0)
        return false;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char text[1024];
    ssize_t n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    const char* line = strstr(text, "\nPid:");
    if (!line)
        return false;
    long pid = strtol(line + 5, nullptr, 10);
    return pid != -1;
}

int signalPinnedProcess(int pidfd, int sig) {
    return syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0 ? 0 : -errno;
}

} // namespace coordination
