#include "amdgpu_file_recognizer.h"

#include "base/result.h"
#include "base/small_file.h"

#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <string_view>

namespace frontend {
namespace {

/// `path` without trailing slashes (but "/" stays "/").
std::string withoutTrailingSlashes(std::string path) {
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    return path;
}

/// The last component of the link at `path`; "" when it is not a readable link.
std::string linkBasename(const std::string& path) {
    char buf[PATH_MAX];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
    if (n <= 0)
        return {};
    std::string target(buf, static_cast<size_t>(n));
    size_t slash = target.rfind('/');
    return slash == std::string::npos ? target : target.substr(slash + 1);
}

} // namespace

AmdgpuFileRecognizer::AmdgpuFileRecognizer(std::vector<std::string> mockRoots, Paths paths)
    : paths_(std::move(paths)) {
    for (std::string& root : mockRoots) {
        if (root.empty())
            continue;
        char resolved[PATH_MAX];
        // A file's path in /proc/self/fd is canonical: compare it with the canonical root.
        mockRoots_.push_back(realpath(root.c_str(), resolved) ? std::string(resolved)
                                                              : withoutTrailingSlashes(root));
    }
}

int AmdgpuFileRecognizer::characterMajor(const char* name) const {
    if (!procDevices_) // a few hundred bytes; none when it cannot be read
        procDevices_ = base::readSmallFile(paths_.procDevices, 64 << 10).value_or("");
    // "Character devices:" lines "%3d %s", then a blank line and "Block devices:".
    std::string_view rest(*procDevices_);
    bool character = false;
    while (!rest.empty()) {
        size_t end = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        if (line.starts_with("Character devices:")) {
            character = true;
            continue;
        }
        if (line.starts_with("Block devices:"))
            break;
        size_t first = line.find_first_not_of(' ');
        if (!character || first == std::string_view::npos)
            continue;
        line.remove_prefix(first);
        int major = -1;
        auto [after, ec] = std::from_chars(line.data(), line.data() + line.size(), major);
        if (ec != std::errc())
            continue;
        std::string_view driver = line.substr(static_cast<size_t>(after - line.data()));
        driver.remove_prefix(std::min(driver.find_first_not_of(" \t"), driver.size()));
        driver = driver.substr(0, driver.find_first_of(" \t"));
        if (driver == name)
            return major;
    }
    return -1;
}

bool AmdgpuFileRecognizer::kernelHasGpuDriver() const {
    return characterMajor("kfd") >= 0 || characterMajor("drm") >= 0;
}

std::string AmdgpuFileRecognizer::recognize(const struct stat& st, const std::string& path) const {
    if (!S_ISCHR(st.st_mode))
        return {};
    unsigned major = ::major(st.st_rdev), minor = ::minor(st.st_rdev);
    for (const std::string& root : mockRoots_) {
        std::string prefix = root == "/" ? root : root + "/";
        if (path.compare(0, prefix.size(), prefix) == 0)
            return "a mock GPU device under " + root;
    }
    int kfd = characterMajor("kfd");
    if (kfd >= 0 && major == static_cast<unsigned>(kfd))
        return base::strFormat("the KFD device (char %u:%u)", major, minor);
    int drm = characterMajor("drm");
    if (drm >= 0 && major == static_cast<unsigned>(drm) &&
        linkBasename(base::strFormat("%s/%u:%u/device/driver", paths_.sysDevChar.c_str(), major,
                                     minor)) == "amdgpu")
        return base::strFormat("an amdgpu DRM node (char %u:%u)", major, minor);
    return {};
}

} // namespace frontend
