#include "open_watch.h"

#include <gtest/gtest.h>

#include <sys/inotify.h>
#include <unistd.h>

#include <cstring>

namespace testsupport {

OpenWatch::OpenWatch(const std::string& dir) : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    EXPECT_GE(fd_, 0) << strerror(errno);
    EXPECT_GE(inotify_add_watch(fd_, dir.c_str(), IN_OPEN), 0) << dir << ": " << strerror(errno);
}

OpenWatch::~OpenWatch() {
    if (fd_ >= 0)
        close(fd_);
}

bool OpenWatch::opened(const std::string& name) {
    alignas(inotify_event) char buf[4096];
    for (;;) {
        ssize_t n = read(fd_, buf, sizeof buf);
        if (n <= 0)
            break;
        for (ssize_t at = 0; at < n;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buf + at);
            if (event->len > 0)
                seen_ += std::string(event->name) + "/";
            at += ssize_t(sizeof(inotify_event) + event->len);
        }
    }
    return seen_.find(name + "/") == 0 || seen_.find("/" + name + "/") != std::string::npos;
}

} // namespace testsupport
