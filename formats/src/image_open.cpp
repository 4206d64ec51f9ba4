// Opening a checkpoint's files as hostile input (formats/image_open.h): a component-by-component
// walk with O_NOFOLLOW, bounded by the image directory's parent.
#include "formats/image_open.h"
#include "base/path_components.h"

#include "same_file_reopen.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <deque>
#include <vector>

namespace formats {

using base::Error;
using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::pathComponents;
using base::Result;
using base::success;

namespace {

/// The most symbolic links one walk follows (the kernel's own limit).
constexpr int kMaxLinks = 40;

/// What a file that is not a regular file is, in words.
const char* kindOf(mode_t mode) {
    if (S_ISLNK(mode))
        return "a symbolic link";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISDIR(mode))
        return "a directory";
    return "not a regular file";
}

Error refused(const std::string& path, const std::string& why) {
    return makeError(ErrorCode::Image,
                     "%s: %s, refused (a checkpoint directory is untrusted input)", path.c_str(),
                     why.c_str());
}

/// The directories a walk went through: [the image directory's parent, ..., where it is now].
class Walk {
public:
    Walk() = default;
    Walk(const Walk&) = delete;
    Walk& operator=(const Walk&) = delete;
    ~Walk() {
        for (int fd : fds_)
            ::close(fd);
    }
    Result<void> start(int dirFd, const std::string& path) {
        int outer = openat(dirFd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (outer < 0)
            return makeErrnoError(ErrorCode::Io, errno,
                                  "%s: cannot open the image directory's parent", path.c_str());
        fds_.push_back(outer);
        int self = openat(dirFd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (self < 0)
            return makeErrnoError(ErrorCode::Io, errno, "%s: cannot open the image directory",
                                  path.c_str());
        fds_.push_back(self);
        return success();
    }
    int top() const { return fds_.back(); }
    bool atBound() const { return fds_.size() == 1; }
    void up() {
        ::close(fds_.back());
        fds_.pop_back();
    }
    void push(int fd) { fds_.push_back(fd); }

private:
    std::vector<int> fds_;
};

Error statError(const std::string& path, const std::string& component, int err) {
    if (err == ENOENT || err == ENOTDIR)
        return makeErrnoError(ErrorCode::NotFound, err, "%s: %s does not exist", path.c_str(),
                              component.c_str());
    return makeErrnoError(ErrorCode::Io, err, "%s: cannot look at %s", path.c_str(),
                          component.c_str());
}

/// Walks `path` from `dirFd`. With `followLast`, to the directory it names; else to the directory
/// holding its last component, which is returned ("." when the path ends at a directory).
Result<std::string> walkTo(Walk& walk, int dirFd, const std::string& path, bool followLast) {
    HAL_TRY(checkImagePath(path, path));
    HAL_TRY(walk.start(dirFd, path));
    std::deque<std::string> todo = pathComponents(path);
    int links = 0;
    while (!todo.empty()) {
        std::string c = std::move(todo.front());
        todo.pop_front();
        if (c == "..") {
            if (walk.atBound())
                return refused(path, "it leads out of the image directory's parent directory");
            walk.up();
            continue;
        }
        bool last = todo.empty();
        if (last && !followLast)
            return c;
        struct stat st;
        if (fstatat(walk.top(), c.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
            return statError(path, c, errno);
        if (S_ISLNK(st.st_mode)) {
            if (++links > kMaxLinks)
                return refused(path, "more than 40 symbolic links on the way (a loop?)");
            std::string target(PATH_MAX, '\0');
            ssize_t n = readlinkat(walk.top(), c.c_str(), target.data(), target.size());
            if (n < 0)
                return makeErrnoError(ErrorCode::Io, errno, "%s: cannot read the link %s",
                                      path.c_str(), c.c_str());
            target.resize(static_cast<size_t>(n));
            if (target.empty() || target.front() == '/')
                return refused(path, c + " is a link to the absolute path " + target);
            std::deque<std::string> more = pathComponents(target);
            todo.insert(todo.begin(), more.begin(), more.end());
            continue;
        }
        if (!S_ISDIR(st.st_mode))
            return refused(path, c + " is " + kindOf(st.st_mode) + ", not a directory");
        int fd = openat(walk.top(), c.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return statError(path, c, errno);
        walk.push(fd);
    }
    return std::string(".");
}

} // namespace

Result<void> checkImagePath(const std::string& path, const std::string& what) {
    if (path.empty())
        return refused(what, "an empty path");
    if (path.front() == '/')
        return refused(what, "an absolute path (a checkpoint's files are named relative to its "
                             "image directory)");
    int depth = 0; // 0: the image directory, -1: its parent
    for (const std::string& c : pathComponents(path)) {
        depth += c == ".." ? -1 : 1;
        if (depth < -1)
            return refused(what,
                           "a path that climbs out of the image directory's parent directory");
    }
    return success();
}

Result<int> openImageFile(int dirFd, const std::string& path) {
    Walk walk;
    HAL_TRY_ASSIGN(std::string name, walkTo(walk, dirFd, path, false));
    if (name == ".")
        return refused(path, "a directory, not an image file");
    // Opened once without calling any driver (O_PATH), judged on that fd, then reopened through
    // /proc/self/fd: the same inode, whatever the name names by then.
    int pathFd = openat(walk.top(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (pathFd < 0)
        return statError(path, name, errno);
    struct stat st;
    if (fstat(pathFd, &st) != 0) {
        int err = errno;
        ::close(pathFd);
        return statError(path, name, err);
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(pathFd);
        return refused(path, std::string("it is ") + kindOf(st.st_mode) + ", not a regular file");
    }
    // O_NONBLOCK and the comparison: should /proc/self/fd/N reach anything else, a FIFO is
    // neither waited on nor read, nor another file read.
    auto opened = reopenSameFile(pathFd, O_RDONLY | O_NONBLOCK | O_NOCTTY, st, path);
    ::close(pathFd);
    if (!opened)
        return opened.error().code() == ErrorCode::Image
                   ? refused(path, "what was opened is not the regular file that was checked")
                   : std::move(opened).error();
    int fd = *opened;
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int err = errno;
        ::close(fd);
        return makeErrnoError(ErrorCode::Io, err, "%s: cannot clear O_NONBLOCK", path.c_str());
    }
    return fd;
}

Result<int> openImageDirectory(int dirFd, const std::string& path) {
    Walk walk;
    HAL_TRY(walkTo(walk, dirFd, path, true));
    int fd = openat(walk.top(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "%s: cannot open the directory", path.c_str());
    return fd;
}

} // namespace formats
