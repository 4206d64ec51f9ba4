#include "config/sources.h"

#include "base/trusted_path.h"

#include <cerrno>

namespace config {
namespace {

base::Error readError(int err, const char* what, const std::string& path) {
    return base::makeErrnoError(base::ErrorCode::Config, err, "cannot read %s %s", what,
                                path.c_str());
}

} // namespace

// Reading a configuration file must end, and soon: it runs inside criu at every dump and restore.
// criu runs as root with what the file says: it must be root's (or the caller's) and writable by
// no one else, every directory on the way to it too (base/trusted_path.h). The path is judged
// first, through an O_PATH fd that opens nothing; only a regular file that passed is then read,
// through that fd, so neither a FIFO (which would wait for a writer) nor a device is ever opened,
// and a name swapped after the check reads nothing else. /dev/null reads as empty, unopened.
base::Result<bool> readTextFile(const std::string& path, bool mustExist, const char* what,
                                const char* option, std::string* text) {
    auto trusted = base::openTrustedPath(path, option, base::TrustedKind::FileOrNullDevice);
    if (!trusted.ok()) {
        int err = trusted.error().sysErrno();
        if (err == ENOENT && !mustExist)
            return false;
        if (err == ENOENT)
            return readError(err, what, path);
        return std::move(trusted).error();
    }
    auto content = base::readTrustedFile(*trusted, kMaxConfigFileBytes);
    if (!content.ok())
        return readError(content.error().sysErrno(), what, path);
    if (content->size() > kMaxConfigFileBytes)
        return base::makeError(base::ErrorCode::Config,
                               "cannot read %s %s: it is larger than %zu bytes, which no "
                               "configuration file needs",
                               what, path.c_str(), kMaxConfigFileBytes);
    *text = std::move(*content);
    return true;
}

} // namespace config
