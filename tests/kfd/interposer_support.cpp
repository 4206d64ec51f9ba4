#include "interposer_support.h"

#include <cerrno>
#include <climits>
#include <cstring>

namespace kfdinterpose {

std::string routedSysfsPath(const std::string& path, const std::string& sysfsRoot,
                            int (*realStat)(const char*, struct stat*)) {
    static const char* roots[] = {"/sys/devices/virtual/kfd/kfd/topology",
                                  "/sys/class/kfd/kfd/topology"};
    for (const char* root : roots) {
        size_t n = strlen(root);
        if (path.compare(0, n, root) == 0 && (path.size() == n || path[n] == '/'))
            return sysfsRoot + path.substr(n);
    }
    static const std::string numa = "/sys/devices/system/node/node";
    if (path.compare(0, numa.size(), numa) == 0) {
        size_t end = path.find('/', numa.size());
        std::string node = path.substr(0, end);
        struct stat st {};
        if (realStat(node.c_str(), &st) != 0)
            return numa + "0" + (end == std::string::npos ? "" : path.substr(end));
    }
    return path;
}

FILE* nextFopen(bool large, const std::string& path, const char* mode) {
    using Fopen = FILE* (*)(const char*, const char*);
    static auto fopen = nextDefinition<Fopen>("fopen");
    static auto fopen64 = nextDefinition<Fopen>("fopen64");
    return (large ? fopen64 : fopen)(path.c_str(), mode);
}

DIR* nextOpendir(const std::string& path) {
    static auto opendir = nextDefinition<DIR* (*)(const char*)>("opendir");
    return opendir(path.c_str());
}

std::string routedPathOf(const char* path, const std::string& sysfsRoot) {
    if (!path || sysfsRoot.empty())
        return path ? path : "";
    static auto realStat = nextDefinition<int (*)(const char*, struct stat*)>("stat");
    return routedSysfsPath(path, sysfsRoot, realStat);
}

bool isDriverDevicePath(const char* path) {
    return path && (strcmp(path, "/dev/kfd") == 0 || strncmp(path, "/dev/dri/renderD", 16) == 0);
}

std::string driverRootFromEnvironment(const char* who) {
    const char* root = getenv("CRIU_AMDGPU_KFD_DRIVER");
    char real[PATH_MAX];
    if (!root || !*root)
        return "";
    if (!realpath(root, real)) {
        fprintf(stderr, "%s: CRIU_AMDGPU_KFD_DRIVER=%s: %s\n", who, root, strerror(errno));
        return "";
    }
    return real;
}

} // namespace kfdinterpose
