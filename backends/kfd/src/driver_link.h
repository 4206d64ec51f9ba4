#pragma once
// The KFD backend's connection to a user-space KFD driver (tests/kfd/DRIVER.md), shared by
// DriverKernel and its libdrm. Internal to the kfd backend.
#include "kfd/driver_protocol.h"

#include <sys/types.h>

#include <mutex>
#include <string>

namespace kfd {

class DriverLink {
public:
    /// The driver at `root` (made canonical).
    explicit DriverLink(std::string root);
    ~DriverLink();
    DriverLink(const DriverLink&) = delete;
    DriverLink& operator=(const DriverLink&) = delete;

    const std::string& root() const { return root_; }

    /// Sends `request` (with `passFd` when >= 0) as this process and waits for the answer: false
    /// when the driver cannot be reached. A process forked with the connection makes its own, as
    /// the driver takes the caller from the connection.
    bool call(const kfddriver::Message& request, kfddriver::Message* answer, int passFd = -1);

    /// The driver's id of the file `fd` of this process is an fd of, or -1 when not one of the
    /// driver's.
    int64_t fileOf(int fd) const { return kfddriver::fileOfFd(root_, 0, fd); }

private:
    std::string root_;
    std::mutex mu_;
    int sock_ = -1;
    pid_t connectedPid_ = -1;
};

} // namespace kfd
