#include "proc_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace drm {
namespace fs = std::filesystem;

namespace {

bool parseInt(const std::string& text, int* out) {
    if (text.empty() || text.size() > 9)
        return false;
    int v = 0;
    for (char c : text) {
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
}

} // namespace

std::string drmClientId(const Paths& paths, const std::string& who, int fd) {
    std::ifstream in(paths.procRoot + "/" + who + "/fdinfo/" + std::to_string(fd));
    std::string line;
    static const std::string kKey = "drm-client-id:";
    while (std::getline(in, line)) {
        if (line.compare(0, kKey.size(), kKey) != 0)
            continue;
        size_t start = line.find_first_not_of(" \t", kKey.size());
        return start == std::string::npos ? "" : line.substr(start);
    }
    return "";
}

std::vector<ProcRenderFd> renderFdsOfPid(const Paths& paths, int pid) {
    std::vector<ProcRenderFd> out;
    std::error_code ec;
    std::string dir = paths.procRoot + "/" + std::to_string(pid) + "/fd";
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        int fd = -1;
        if (!parseInt(entry.path().filename().string(), &fd))
            continue;
        std::error_code lec;
        fs::path target = fs::read_symlink(entry.path(), lec);
        if (lec)
            continue;
        int minor = renderMinorOfPath(target.string());
        if (minor < 0)
            continue;
        ProcRenderFd r;
        r.pid = pid;
        r.fd = fd;
        r.minor = static_cast<unsigned>(minor);
        r.path = target.string();
        r.clientId = drmClientId(paths, std::to_string(pid), fd);
        out.push_back(std::move(r));
    }
    std::sort(out.begin(), out.end(),
              [](const ProcRenderFd& a, const ProcRenderFd& b) { return a.fd < b.fd; });
    return out;
}

std::vector<int> listPids(const Paths& paths) {
    std::vector<int> out;
    std::error_code ec;
    int self = -1;
    fs::path selfLink = fs::read_symlink(paths.procRoot + "/self", ec);
    if (!ec)
        parseInt(selfLink.filename().string(), &self);
    for (const auto& entry : fs::directory_iterator(paths.procRoot, ec)) {
        int pid = 0;
        if (parseInt(entry.path().filename().string(), &pid) && pid != self)
            out.push_back(pid);
    }
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace drm
