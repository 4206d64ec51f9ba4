#include "amdgpu_file_recognizer.h"

#include "base/result.h"

#include <sys/sysmacros.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

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
    if (!procDevices_) {
        std::ifstream in(paths_.procDevices);
        std::stringstream text;
        text << in.rdbuf();
        procDevices_ = text.str();
    }
    // "Character devices:" lines "%3d %s", then a blank line and "Block devices:".
    std::istringstream lines(*procDevices_);
    std::string line;
    bool character = false;
    while (std::getline(lines, line)) {
        if (line.rfind("Character devices:", 0) == 0) {
            character = true;
            continue;
        }
        if (line.rfind("Block devices:", 0) == 0)
            break;
        std::istringstream fields(line);
        int major = -1;
        std::string driver;
        if (character && (fields >> major >> driver) && driver == name)
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
        return hal::strFormat("the KFD device (char %u:%u)", major, minor);
    int drm = characterMajor("drm");
    if (drm >= 0 && major == static_cast<unsigned>(drm) &&
        linkBasename(hal::strFormat("%s/%u:%u/device/driver", paths_.sysDevChar.c_str(), major,
                                    minor)) == "amdgpu")
        return hal::strFormat("an amdgpu DRM node (char %u:%u)", major, minor);
    return {};
}

} // namespace frontend
