#include "coordination/paused_record.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace coordination {

using base::ErrorCode;
using base::makeErrnoError;
using base::makeError;
using base::Result;
using base::strFormat;
using base::success;

namespace {

constexpr const char* kRecordPrefix = "paused-";

/// A pid in decimal: digits only, 1 .. INT_MAX.
bool parsePid(const std::string& text, int* out) {
    if (text.empty() || text.size() > 10 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return false;
    long long v = std::strtoll(text.c_str(), nullptr, 10);
    if (v <= 0 || v > INT_MAX)
        return false;
    *out = static_cast<int>(v);
    return true;
}

Result<std::string> readText(const std::string& path) {
    std::ifstream in(path);
    if (!in)
        return makeErrnoError(ErrorCode::Io, errno, "cannot read %s", path.c_str());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

std::string pausedRecordPath(const std::string& dir, int criuPid) {
    return dir + "/" + kRecordPrefix + std::to_string(criuPid);
}

std::string guardianLogPath(const std::string& dir, int criuPid) {
    return dir + "/guardian-" + std::to_string(criuPid) + ".log";
}

Result<void> writePausedRecord(const std::string& dir, const PausedRecord& record) {
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return makeErrnoError(ErrorCode::Io, errno, "cannot make %s", dir.c_str());
    std::string text = strFormat("criu %d\n", record.criuPid);
    if (record.guardianPid > 0) // 0: none known
        text += strFormat("guardian %d\n", record.guardianPid);
    text += strFormat("backend %s\n", record.backend.c_str());
    for (int pid : record.paused)
        text += strFormat("paused %d\n", pid);
    std::string path = pausedRecordPath(dir, record.criuPid);
    std::string tmp = path + ".tmp";
    // A new file, never through a link: a stale one (a writer killed midway) is unlinked first,
    // which removes a link itself, not what it points at.
    if (unlink(tmp.c_str()) != 0 && errno != ENOENT)
        return makeErrnoError(ErrorCode::Io, errno, "cannot remove the stale %s", tmp.c_str());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return makeErrnoError(ErrorCode::Io, errno, "cannot create %s", tmp.c_str());
    bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    int err = errno;
    close(fd);
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
        err = ok ? errno : err;
        unlink(tmp.c_str());
        return makeErrnoError(ErrorCode::Io, err, "cannot write %s", path.c_str());
    }
    return success();
}

Result<PausedRecord> parsePausedRecord(const std::string& text, const std::string& name) {
    PausedRecord r;
    std::istringstream lines(text);
    std::string line;
    int number = 0;
    while (std::getline(lines, line)) {
        ++number;
        if (line.empty())
            continue;
        size_t space = line.find(' ');
        std::string key = line.substr(0, space);
        std::string value = space == std::string::npos ? "" : line.substr(space + 1);
        int pid = 0;
        bool good = true;
        if (key == "backend")
            r.backend = value;
        else if (key == "criu")
            good = parsePid(value, &r.criuPid);
        else if (key == "guardian")
            good = parsePid(value, &r.guardianPid);
        else if (key == "paused" && (good = parsePid(value, &pid)))
            r.paused.push_back(pid);
        else
            good = false;
        if (!good)
            return makeError(ErrorCode::Image, "%s:%d: not a guardian record line: \"%s\"",
                             name.c_str(), number, line.c_str());
    }
    if (!r.criuPid)
        return makeError(ErrorCode::Image, "%s: no \"criu <pid>\" line", name.c_str());
    return r;
}

Result<std::vector<PausedRecord>> readPausedRecords(const std::string& dir) {
    std::vector<PausedRecord> records;
    DIR* d = opendir(dir.c_str());
    if (!d) {
        if (errno == ENOENT)
            return records;
        return makeErrnoError(ErrorCode::Io, errno, "cannot list %s", dir.c_str());
    }
    std::vector<std::string> names;
    while (struct dirent* e = readdir(d)) {
        std::string name = e->d_name;
        int pid = 0;
        if (name.rfind(kRecordPrefix, 0) == 0 && parsePid(name.substr(strlen(kRecordPrefix)), &pid))
            names.push_back(name);
    }
    closedir(d);
    for (const std::string& name : names) {
        std::string path = dir + "/" + name;
        auto text = readText(path);
        if (!text.ok() && text.error().sysErrno() == ENOENT)
            continue; // its guardian removed it meanwhile
        HAL_TRY(text);
        HAL_TRY_ASSIGN(PausedRecord r, parsePausedRecord(*text, path));
        r.path = path;
        records.push_back(std::move(r));
    }
    std::sort(records.begin(), records.end(),
              [](const PausedRecord& a, const PausedRecord& b) { return a.criuPid < b.criuPid; });
    return records;
}

Result<void> forgetPausedProcess(const std::string& dir, int pid) {
    HAL_TRY_ASSIGN(std::vector<PausedRecord> records, readPausedRecords(dir));
    for (PausedRecord& r : records) {
        auto it = std::find(r.paused.begin(), r.paused.end(), pid);
        if (it == r.paused.end())
            continue;
        r.paused.erase(it);
        if (r.paused.empty()) {
            if (unlink(r.path.c_str()) != 0 && errno != ENOENT)
                return makeErrnoError(ErrorCode::Io, errno, "cannot remove %s", r.path.c_str());
        } else {
            HAL_TRY(writePausedRecord(dir, r));
        }
    }
    return success();
}

} // namespace coordination
