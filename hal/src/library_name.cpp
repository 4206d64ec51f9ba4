#include "library_name.h"

#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <set>

namespace hal {
namespace {

/// The names of every object loaded now.
std::set<std::string> loadedNames() {
    std::set<std::string> names;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
            if (info->dlpi_name && *info->dlpi_name)
                static_cast<std::set<std::string>*>(out)->insert(info->dlpi_name);
            return 0;
        },
        &names);
    return names;
}

std::string procName(int fd) {
    return "/proc/self/fd/" + std::to_string(fd);
}

} // namespace

FdLibraryName::FdLibraryName(const TrustedPath& checked) : path_(procName(checked.fd())) {
    std::set<std::string> taken = loadedNames();
    while (taken.count(path_) != 0) {
        int fd = fcntl(checked.fd(), F_DUPFD_CLOEXEC, 0);
        if (fd < 0) {
            path_.clear();
            return;
        }
        held_.push_back(fd);
        path_ = procName(fd);
    }
}

FdLibraryName::~FdLibraryName() {
    for (int fd : held_)
        close(fd);
}

} // namespace hal
