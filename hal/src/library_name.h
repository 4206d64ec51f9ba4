#pragma once
/// \file
/// The name a checked library is loaded under: "/proc/self/fd/N" of the fd that was judged.

#include "base/trusted_path.h"

#include <string>
#include <vector>

namespace hal {

/// A "/proc/self/fd/N" opening the object `checked` holds, under a name no loaded object has:
/// the dynamic loader hands back an object already loaded under the name asked for without
/// opening anything, and a library loaded earlier through an fd since closed keeps the name
/// that fd had. N is checked's own fd, or a duplicate of it (held in `held` until the load
/// is done) when a loaded object already has that name.
class FdLibraryName {
public:
    explicit FdLibraryName(const TrustedPath& checked);
    ~FdLibraryName();
    FdLibraryName(const FdLibraryName&) = delete;
    FdLibraryName& operator=(const FdLibraryName&) = delete;

    /// The name, "" when no fd was free to make one.
    const std::string& path() const { return path_; }

private:
    std::string path_;
    std::vector<int> held_;
};

} // namespace hal
