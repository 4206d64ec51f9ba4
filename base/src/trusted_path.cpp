#include "base/trusted_path.h"

#include "base/path_components.h"

#include <cerrno>
#include <climits>
#include <deque>
#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <utility>

namespace base {

TrustedPath::~TrustedPath() {
    if (fd_ >= 0)
        close(fd_);
}

TrustedPath::TrustedPath(TrustedPath&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), status_(other.status_),
      resolved_(std::move(other.resolved_)) {}

TrustedPath& TrustedPath::operator=(TrustedPath&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0)
            close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        status_ = other.status_;
        resolved_ = std::move(other.resolved_);
    }
    return *this;
}

std::string TrustedPath::procPath() const {
    return "/proc/self/fd/" + std::to_string(fd_);
}

bool TrustedPath::isNullDevice() const {
    return fd_ >= 0 && S_ISCHR(status_.st_mode) && status_.st_rdev == makedev(1, 3);
}

namespace {

/// As many links as the kernel follows in one path walk.
constexpr int kMaxLinks = 40;

bool ownedByTrustedUser(const struct stat& st) {
    return st.st_uid == 0 || st.st_uid == geteuid();
}

const char* ownerWord() {
    return geteuid() == 0 ? "root" : "root or you";
}

/// What was found on the way to the object: its directory or a link (nullptr: the object).
enum class Role { Object, Directory, Link };

std::string below(const std::string& dir, const std::string& name) {
    return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string above(const std::string& dir) {
    auto slash = dir.find_last_of('/');
    return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

/// An fd closed when it goes out of scope.
class OwnedFd {
public:
    explicit OwnedFd(int fd = -1) : fd_(fd) {}
    ~OwnedFd() {
        if (fd_ >= 0)
            close(fd_);
    }
    OwnedFd(OwnedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    OwnedFd& operator=(OwnedFd&& other) noexcept {
        std::swap(fd_, other.fd_);
        return *this;
    }
    int get() const { return fd_; }
    int release() { return std::exchange(fd_, -1); }

private:
    int fd_;
};

/// One walk of one path: where it is (an fd judged already) and what is left to walk.
class Walk {
public:
    Walk(const std::string& path, const char* option, TrustedKind kind)
        : path_(path), option_(option), kind_(kind) {}

    /// Walks `rest` from the directory `start` (judged already), shown as `shown`.
    Result<TrustedPath> from(OwnedFd start, std::string shown, std::deque<std::string> rest) {
        here_ = std::move(start);
        shown_ = std::move(shown);
        rest_ = std::move(rest);
        while (!rest_.empty()) {
            std::string name = std::move(rest_.front());
            rest_.pop_front();
            OwnedFd next(openat(here_.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
            if (next.get() < 0)
                return unresolved(errno);
            struct stat st {};
            if (fstat(next.get(), &st) != 0)
                return makeErrnoError(ErrorCode::Config, errno, "%s '%s': cannot stat '%s'",
                                      option_, path_.c_str(), shownBelow(name).c_str());
            std::string nextShown = shownBelow(name);
            if (S_ISLNK(st.st_mode)) {
                HAL_TRY(follow(next, st, nextShown));
                continue;
            }
            if (rest_.empty())
                return object(std::move(next), st, nextShown);
            if (!S_ISDIR(st.st_mode))
                return unresolved(ENOTDIR);
            HAL_TRY(judgeDirectory(st, nextShown));
            here_ = std::move(next);
            shown_ = std::move(nextShown);
        }
        // A link to a directory ended the walk ("/", "." or "..").
        struct stat st {};
        if (fstat(here_.get(), &st) != 0)
            return makeErrnoError(ErrorCode::Config, errno, "%s '%s': cannot stat it", option_,
                                  path_.c_str());
        return object(std::move(here_), st, shown_);
    }

    /// The root directory, opened and judged.
    Result<OwnedFd> root() {
        OwnedFd fd(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
        struct stat st {};
        if (fd.get() < 0 || fstat(fd.get(), &st) != 0)
            return makeErrnoError(ErrorCode::Config, errno, "%s '%s': cannot open '/'", option_,
                                  path_.c_str());
        HAL_TRY(judgeDirectory(st, "/"));
        return fd;
    }

private:
    std::string shownBelow(const std::string& name) const {
        return name == ".." ? above(shown_) : below(shown_, name);
    }

    Error unresolved(int err) const {
        return makeErrnoError(ErrorCode::Config, err, "%s '%s' cannot be resolved", option_,
                              path_.c_str());
    }

    Error untrusted(Role role, const std::string& component, const std::string& why) const {
        std::string where = "'" + path_ + "'";
        if (role == Role::Directory)
            where += ": its directory '" + component + "'";
        else if (role == Role::Link)
            where += ": its link '" + component + "'";
        return makeError(ErrorCode::Config,
                         "%s %s %s; code, configuration and keys are only taken from paths owned "
                         "by %s and writable by no one else",
                         option_, where.c_str(), why.c_str(), ownerWord());
    }

    Result<void> judgeOwner(Role role, const struct stat& st, const std::string& shown) const {
        if (!ownedByTrustedUser(st))
            return untrusted(role, shown, strFormat("is owned by uid %u", unsigned(st.st_uid)));
        return success();
    }

    Error writableByOthers(Role role, const struct stat& st, const std::string& shown) const {
        return untrusted(
            role, shown,
            strFormat("is writable by group or others (mode %04o)", unsigned(st.st_mode & 07777)));
    }

    /// A directory on the way: root's sticky directories may be writable by others.
    Result<void> judgeDirectory(const struct stat& st, const std::string& shown) const {
        HAL_TRY(judgeOwner(Role::Directory, st, shown));
        bool othersWrite = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
        bool rootSticky = st.st_uid == 0 && (st.st_mode & S_ISVTX) != 0;
        if (othersWrite && !rootSticky)
            return writableByOthers(Role::Directory, st, shown);
        return success();
    }

    /// A link: its directory was judged (here_); the link must be a trusted user's too, then its
    /// target is walked in place of it.
    Result<void> follow(const OwnedFd& link, const struct stat& st, const std::string& shown) {
        HAL_TRY(judgeOwner(Role::Link, st, shown));
        if (++links_ > kMaxLinks)
            return unresolved(ELOOP);
        char target[PATH_MAX];
        ssize_t n = readlinkat(link.get(), "", target, sizeof target);
        if (n <= 0 || size_t(n) >= sizeof target)
            return unresolved(n < 0 ? errno : n == 0 ? ENOENT : ENAMETOOLONG);
        std::string text(target, size_t(n));
        auto parts = pathComponents(text);
        rest_.insert(rest_.begin(), parts.begin(), parts.end());
        if (text.front() == '/') {
            HAL_TRY_ASSIGN(here_, root());
            shown_.assign(1, '/');
        }
        return success();
    }

    /// The object the path names.
    Result<TrustedPath> object(OwnedFd fd, const struct stat& st, const std::string& shown) const {
        bool nullDevice = S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
        if (kind_ == TrustedKind::FileOrNullDevice && nullDevice)
            return TrustedPath(fd.release(), st, shown);
        if (kind_ == TrustedKind::Directory && !S_ISDIR(st.st_mode))
            return untrusted(Role::Object, shown, "is not a directory");
        if (kind_ != TrustedKind::Directory && !S_ISREG(st.st_mode))
            return untrusted(Role::Object, shown,
                             strFormat("is not a regular file (it is %s)", typeName(st)));
        HAL_TRY(judgeOwner(Role::Object, st, shown));
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
            return writableByOthers(Role::Object, st, shown);
        return TrustedPath(fd.release(), st, shown);
    }

    static const char* typeName(const struct stat& st) {
        if (S_ISDIR(st.st_mode))
            return "a directory";
        if (S_ISFIFO(st.st_mode))
            return "a FIFO";
        if (S_ISSOCK(st.st_mode))
            return "a socket";
        if (S_ISCHR(st.st_mode))
            return "a character device";
        if (S_ISBLK(st.st_mode))
            return "a block device";
        return "of an unknown type";
    }

    const std::string& path_;
    const char* option_;
    TrustedKind kind_;
    OwnedFd here_;
    std::string shown_;
    std::deque<std::string> rest_;
    int links_ = 0;
};

} // namespace

Result<TrustedPath> openTrustedPath(const std::string& path, const char* option, TrustedKind kind) {
    if (path.empty())
        return makeError(ErrorCode::Config, "%s is empty", option);
    std::string absolute = path;
    if (path.front() != '/') {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return makeErrnoError(ErrorCode::Config, errno,
                                  "%s '%s' cannot be resolved: no working directory", option,
                                  path.c_str());
        absolute = below(cwd, path);
    }
    Walk walk(path, option, kind);
    HAL_TRY_ASSIGN(OwnedFd root, walk.root());
    return walk.from(std::move(root), "/", pathComponents(absolute));
}

Result<TrustedPath> openTrustedPathAt(const TrustedPath& dir, const std::string& name,
                                      const std::string& shownAs, const char* option,
                                      TrustedKind kind) {
    OwnedFd start(fcntl(dir.fd(), F_DUPFD_CLOEXEC, 0));
    if (start.get() < 0)
        return makeErrnoError(ErrorCode::Config, errno, "%s '%s': cannot hold its directory",
                              option, shownAs.c_str());
    Walk walk(shownAs, option, kind);
    if (name.empty() || name.front() == '/')
        return makeError(ErrorCode::Config, "%s '%s': not a name inside '%s'", option,
                         shownAs.c_str(), dir.resolved().c_str());
    return walk.from(std::move(start), dir.resolved(), pathComponents(name));
}

Result<void> checkTrustedPath(const std::string& path, const char* option, TrustedKind kind) {
    HAL_TRY(openTrustedPath(path, option, kind));
    return success();
}

} // namespace base
