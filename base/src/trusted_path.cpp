#include "base/trusted_path.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace hal {
namespace {

bool ownedByTrustedUser(const struct stat& st) { return st.st_uid == 0 || st.st_uid == geteuid(); }

const char* ownerWord() { return geteuid() == 0 ? "root" : "root or you"; }

Error untrusted(const char* option, const std::string& path, const std::string& component,
                const std::string& why) {
    std::string where = component == path ? "'" + path + "'"
                                          : "'" + path + "': its directory '" + component + "'";
    return makeError(ErrorCode::Config,
                     "%s %s %s; code, configuration and keys are only taken from paths owned by %s "
                     "and writable by no one else",
                     option, where.c_str(), why.c_str(), ownerWord());
}

/// Checks one directory above the trusted path.
Result<void> checkAncestor(const char* option, const std::string& path, const std::string& dir) {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0)
        return makeErrnoError(ErrorCode::Config, errno, "%s '%s': cannot stat its directory '%s'",
                              option, path.c_str(), dir.c_str());
    if (!ownedByTrustedUser(st))
        return untrusted(option, path, dir, strFormat("is owned by uid %u", unsigned(st.st_uid)));
    bool othersWrite = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    bool rootSticky = st.st_uid == 0 && (st.st_mode & S_ISVTX) != 0;
    if (othersWrite && !rootSticky)
        return untrusted(option, path, dir,
                         strFormat("is writable by group or others (mode %04o)",
                                   unsigned(st.st_mode & 07777)));
    return success();
}

} // namespace

Result<void> checkTrustedPath(const std::string& path, const char* option, TrustedKind kind) {
    if (path.empty())
        return makeError(ErrorCode::Config, "%s is empty", option);
    char resolvedBuf[PATH_MAX];
    if (!realpath(path.c_str(), resolvedBuf))
        return makeErrnoError(ErrorCode::Config, errno, "%s '%s' cannot be resolved", option,
                              path.c_str());
    std::string resolved = resolvedBuf;

    struct stat st {};
    if (stat(resolved.c_str(), &st) != 0)
        return makeErrnoError(ErrorCode::Config, errno, "%s '%s': cannot stat it", option,
                              path.c_str());
    bool isDir = S_ISDIR(st.st_mode);
    if (kind == TrustedKind::Directory && !isDir)
        return untrusted(option, path, path, "is not a directory");
    if (kind == TrustedKind::File && !S_ISREG(st.st_mode))
        return untrusted(option, path, path, "is not a regular file");
    if (!ownedByTrustedUser(st))
        return untrusted(option, path, path, strFormat("is owned by uid %u", unsigned(st.st_uid)));
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        return untrusted(option, path, path,
                         strFormat("is writable by group or others (mode %04o)",
                                   unsigned(st.st_mode & 07777)));

    // Every directory above it, up to and including "/".
    std::string dir = resolved;
    while (dir != "/") {
        auto slash = dir.find_last_of('/');
        dir = slash == 0 ? "/" : dir.substr(0, slash);
        HAL_TRY(checkAncestor(option, path, dir));
    }
    return success();
}

} // namespace hal
