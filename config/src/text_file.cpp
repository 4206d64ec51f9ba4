#include "config/sources.h"

#include <cerrno>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace config {

hal::Result<bool> readTextFile(const std::string& path, bool mustExist, const char* what,
                               std::string* text) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
        int err = errno;
        if (err == ENOENT && !mustExist)
            return false;
        return hal::makeErrnoError(hal::ErrorCode::Config, err, "cannot read %s %s", what,
                                   path.c_str());
    }
    if (S_ISDIR(st.st_mode))
        return hal::makeErrnoError(hal::ErrorCode::Config, EISDIR, "cannot read %s %s", what,
                                   path.c_str());
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return hal::makeErrnoError(hal::ErrorCode::Config, errno ? errno : EIO, "cannot read %s %s",
                                   what, path.c_str());
    std::ostringstream content;
    content << in.rdbuf();
    if (in.bad())
        return hal::makeErrnoError(hal::ErrorCode::Config, EIO, "cannot read %s %s", what,
                                   path.c_str());
    *text = content.str();
    return true;
}

} // namespace config
