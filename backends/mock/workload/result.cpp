#include "result.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>

namespace workload {
namespace {

std::string stoppedLine(const std::string& who, uint32_t step) {
    return who + ": stopped after step " + std::to_string(step) + "\n";
}

std::string checksumLine(const std::string& prefix, uint64_t checksum) {
    char hex[17];
    snprintf(hex, sizeof(hex), "%016" PRIx64, checksum);
    return prefix + "checksum " + hex + "\n";
}

} // namespace

std::string endLines(uint64_t checksum, uint32_t stoppedAfter,
                     const std::vector<ProcessResult>& parts, bool withStops) {
    std::string text;
    if (withStops) {
        if (stoppedAfter != 0)
            text += stoppedLine("workload", stoppedAfter);
        for (const ProcessResult& p : parts)
            if (p.end.stoppedAfter != 0)
                text += stoppedLine(p.who, p.end.stoppedAfter);
    }
    for (const ProcessResult& p : parts)
        text += checksumLine(p.who + " ", p.end.checksum);
    return text + checksumLine("", checksum);
}

bool writeWhole(const std::string& path, const std::string& text) {
    std::string tmp = path + ".tmp";
    FILE* f = fopen(tmp.c_str(), "w");
    if (!f)
        return false;
    bool ok = fwrite(text.data(), 1, text.size(), f) == text.size();
    int err = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok && rename(tmp.c_str(), path.c_str()) == 0)
        return true;
    if (ok)
        err = errno;
    remove(tmp.c_str());
    errno = err;
    return false;
}

} // namespace workload
