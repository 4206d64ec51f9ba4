#pragma once
/// \file
/// Whether anything in a directory was opened (inotify IN_OPEN): a check that must not open a
/// FIFO or device node (O_PATH opens report nothing; a real open, even with O_NONBLOCK, does).

#include <string>

namespace testsupport {

/// Watches the files directly inside `dir` for opens from the moment it is made.
class OpenWatch {
public:
    explicit OpenWatch(const std::string& dir);
    ~OpenWatch();
    OpenWatch(const OpenWatch&) = delete;
    OpenWatch& operator=(const OpenWatch&) = delete;

    /// Whether the entry `name` of the directory was opened since the watch began (events read
    /// so far are remembered).
    bool opened(const std::string& name);

private:
    int fd_ = -1;
    std::string seen_; ///< names opened so far, each followed by '/'
};

} // namespace testsupport
