#include "driver_link.h"

#include "base/log.h"

#include <climits>
#include <cstdlib>
#include <unistd.h>

namespace kfd {

DriverLink::DriverLink(std::string root) : root_(std::move(root)) {
    char real[PATH_MAX];
    if (realpath(root_.c_str(), real))
        root_ = real;
}

DriverLink::~DriverLink() {
    if (sock_ >= 0)
        ::close(sock_);
}

bool DriverLink::call(const kfddriver::Message& request, kfddriver::Message* answer, int passFd) {
    std::lock_guard<std::mutex> lock(mu_);
    pid_t pid = getpid();
    if (pid != connectedPid_) {
        if (sock_ >= 0)
            ::close(sock_); // a forked child's copy of its parent's connection
        std::string error;
        sock_ = kfddriver::connectDriver(root_, &error);
        connectedPid_ = sock_ >= 0 ? pid : -1;
        if (sock_ < 0) {
            HAL_LOG_ERROR("kfd: %s", error.c_str());
            return false;
        }
    }
    if (kfddriver::exchange(sock_, request, answer, passFd) != 0) {
        HAL_LOG_ERROR("kfd: lost the KFD driver at %s", root_.c_str());
        ::close(sock_);
        sock_ = -1;
        connectedPid_ = -1;
        return false;
    }
    return true;
}

} // namespace kfd
