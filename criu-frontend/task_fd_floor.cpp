#include "task_fd_floor.h"

#include <fcntl.h>
#include <unistd.h>

namespace frontend {

LowFdsHeld::LowFdsHeld(int floor) {
    if (floor <= 0)
        return;
    int first = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (first < 0)
        return; // nothing can be held: the backend's fds land where the kernel puts them
    held_.push_back(first);
    // Each copy takes the lowest free number: the free numbers below the floor, in order.
    for (int fd = first; fd >= 0 && fd < floor;) {
        fd = fcntl(first, F_DUPFD_CLOEXEC, 0);
        if (fd >= floor)
            close(fd);
        else if (fd >= 0)
            held_.push_back(fd);
    }
}

LowFdsHeld::~LowFdsHeld() {
    for (int fd : held_)
        close(fd);
}

} // namespace frontend
