// The real file system behind sysfs::Dir: every directory is an open descriptor and every file is
// opened relative to one (two path components for the kernel to walk per file).
#include "sysfs_text.h"
#include "topology/sysfs_tree.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

namespace topology::sysfs {

std::optional<unsigned> numberedName(std::string_view name) {
    unsigned value = 0;
    if (name.empty() || name.size() > 9 || (name.size() > 1 && name[0] == '0'))
        return std::nullopt;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
    if (ec != std::errc() || end != name.data() + name.size())
        return std::nullopt;
    return value;
}

std::vector<unsigned> Dir::numberedEntries(int* err) const {
    std::vector<unsigned> out;
    for (const std::string& name : entryNames(err))
        if (std::optional<unsigned> n = numberedName(name))
            out.push_back(*n);
    std::sort(out.begin(), out.end());
    return out;
}

namespace {

// A directory open as `fd` (owned unless it is AT_FDCWD).
class FdDir : public Dir {
public:
    explicit FdDir(int fd) : fd_(fd) {}
    ~FdDir() override {
        if (fd_ >= 0)
            ::close(fd_);
    }
    FdDir(const FdDir&) = delete;
    FdDir& operator=(const FdDir&) = delete;

    std::unique_ptr<Dir> openDir(const char* name, int* err) const override {
        int fd = ::openat(fd_, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        *err = fd < 0 ? errno : 0;
        return fd < 0 ? nullptr : std::make_unique<FdDir>(fd);
    }

    int readFile(const char* name, std::string* out) const override {
        return readFileAt(fd_, name, out);
    }

    int readLink(const char* name, std::string* out) const override {
        out->clear();
        std::string buf(256, '\0');
        for (;;) {
            ssize_t n = ::readlinkat(fd_, name, buf.data(), buf.size());
            if (n < 0)
                return errno;
            if (static_cast<size_t>(n) < buf.size()) {
                out->assign(buf.data(), static_cast<size_t>(n));
                return 0;
            }
            buf.resize(buf.size() * 2); // the target may have been cut: read it again
        }
    }

    int resolvedName(const char* name, std::string* out) const override {
        out->clear();
        int fd = ::openat(fd_, name, O_PATH | O_CLOEXEC);
        if (fd < 0)
            return errno;
        // The kernel's name of what the descriptor refers to: realpath() of `name`.
        std::string self = "/proc/self/fd/" + std::to_string(fd);
        std::string path;
        int err = realFileSystem().readLink(self.c_str(), &path);
        ::close(fd);
        if (err)
            return err;
        size_t slash = path.find_last_of('/');
        out->assign(slash == std::string::npos || path == "/" ? path : path.substr(slash + 1));
        return 0;
    }

    std::vector<std::string> entryNames(int* err) const override {
        std::vector<std::string> out;
        *err = 0;
        // readdir() moves the position of its descriptor: it reads a copy, so that threads
        // sharing this directory never see each other's position.
        int copy = ::openat(fd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR* d = copy >= 0 ? ::fdopendir(copy) : nullptr;
        if (!d) {
            *err = errno;
            if (copy >= 0)
                ::close(copy);
            return out;
        }
        while (struct dirent* e = ::readdir(d))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                out.emplace_back(e->d_name);
        ::closedir(d);
        return out;
    }

private:
    int fd_;
};

} // namespace

const Dir& realFileSystem() {
    static const FdDir cwd(AT_FDCWD);
    return cwd;
}

} // namespace topology::sysfs
