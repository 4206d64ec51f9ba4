// Reopening a file through /proc/self/fd, checked to be the same file (same_file_reopen.h).
#include "same_file_reopen.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace formats {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::Result;

void (*reopenHook)(int fd) = nullptr;

Result<int> reopenSameFile(int fd, int flags, const struct stat& judged, const std::string& what) {
    if (reopenHook)
        reopenHook(fd);
    std::string self = "/proc/self/fd/" + std::to_string(fd);
    int again = open(self.c_str(), flags | O_CLOEXEC);
    if (again < 0)
        return makeErrnoError(ErrorCode::Io, errno, "%s: cannot open it again through %s",
                              what.c_str(), self.c_str());
    struct stat st;
    if (fstat(again, &st) != 0 || (st.st_mode & S_IFMT) != (judged.st_mode & S_IFMT) ||
        st.st_dev != judged.st_dev || st.st_ino != judged.st_ino) {
        ::close(again);
        return makeError(ErrorCode::Image,
                         "%s: what was opened through %s is not the file that was checked",
                         what.c_str(), self.c_str());
    }
    return again;
}

} // namespace formats
