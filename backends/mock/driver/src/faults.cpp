#include "mockgpu/faults.h"

#include "mockgpu/files.h"
#include "mockgpu/machine.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

namespace mock {
namespace {

/// Holds an exclusive flock on ROOT/faults.lock, which nothing removes: a counter's read,
/// increment and write must not interleave with another process's (or thread's), or calls are
/// lost; and `mock fault --clear` or `--op` while a workload runs must not pull the faults file
/// or the counters' directory away in the middle of a call (the call would fail on a missing
/// file, a fault nobody injected).
class FaultsLock {
public:
    ~FaultsLock() { release(); }
    void release() {
        if (fd_ >= 0)
            close(fd_); // closing drops the flock
        fd_ = -1;
    }
    base::Result<void> acquire(const MachinePaths& paths) {
        std::string path = paths.faultsLock();
        fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd_ < 0)
            return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot open %s", path.c_str());
        while (flock(fd_, LOCK_EX) != 0)
            if (errno != EINTR)
                return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot lock %s",
                                            path.c_str());
        return base::success();
    }

private:
    int fd_ = -1;
};

/// This process's pid as /proc numbers it: the first NSpid field of /proc/self/status, which is
/// its pid in the namespace of /proc's mount (a restored task in a pid namespace of its own sees
/// the host's /proc while criu restores it); getpid() where there is no NSpid line.
std::string procPid() {
    if (auto status = readWholeFile("/proc/self/status"); status.ok()) {
        std::istringstream lines(status.value());
        std::string line, key, pid;
        while (std::getline(lines, line)) {
            std::istringstream words(line);
            if (words >> key >> pid && key == "NSpid:")
                return pid;
        }
    }
    return std::to_string(getpid());
}

/// Waits, holding no lock, until the marker of a stalled call is removed.
base::Result<void> stall(const std::string& root, const std::string& operation, uint64_t call) {
    std::string marker = stallMarker(root);
    HAL_TRY(
        writeFileAtomic(marker, operation + " " + std::to_string(call) + " " + procPid() + "\n"));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kStallSeconds);
    while (access(marker.c_str(), F_OK) == 0) {
        if (std::chrono::steady_clock::now() >= deadline) {
            removeTree(marker);
            return base::makeError(base::ErrorCode::Injected,
                                   "mock GPU: injected stall in %s (call %llu) was not released "
                                   "within %d s (remove %s to release it)",
                                   operation.c_str(), static_cast<unsigned long long>(call),
                                   kStallSeconds, marker.c_str());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return base::success();
}

/// The errno called `name` ("EIO"), 0 when none is.
int errnoNamed(const std::string& name) {
    for (int err = 1; err < 4096; ++err)
        if (const char* n = strerrorname_np(err); n && name == n)
            return err;
    return 0;
}

} // namespace

std::string stallMarker(const std::string& root) {
    return MachinePaths{root}.faults() + ".stalled";
}

base::Result<void> checkFault(const std::string& root, const std::string& operation) {
    MachinePaths paths{root};
    if (access(paths.faults().c_str(), F_OK) != 0)
        return base::success(); // no faults configured: no lock taken, nothing counted
    FaultsLock lock;
    HAL_TRY(lock.acquire(paths));
    auto text = readWholeFile(paths.faults());
    if (!text.ok())
        return base::success(); // cleared since the check above
    // Count this call first, so "the n-th call" is well defined across processes.
    HAL_TRY(makeDirs(paths.faultCounters()));
    std::string counterPath = paths.faultCounters() + "/" + operation;
    uint64_t count = 0;
    if (auto c = readWholeFile(counterPath); c.ok())
        count = std::strtoull(c.value().c_str(), nullptr, 10);
    ++count;
    HAL_TRY(writeFileAtomic(counterPath, std::to_string(count) + "\n"));

    std::istringstream lines(text.value());
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string op, when, kind;
        if (!(words >> op >> when) || op.empty() || op[0] == '#' || op != operation)
            continue;
        if (when != "always" && std::strtoull(when.c_str(), nullptr, 10) != count)
            continue;
        bool hasKind = static_cast<bool>(words >> kind);
        if (hasKind && kind == "stall") {
            lock.release(); // other calls go on while this one waits
            return stall(root, operation, count);
        }
        if (int err = hasKind ? errnoNamed(kind) : 0)
            return base::makeErrnoError(base::ErrorCode::Injected, err,
                                        "mock GPU: %s failed (injected %s: call %llu, configured "
                                        "in %s)",
                                        operation.c_str(), kind.c_str(),
                                        static_cast<unsigned long long>(count),
                                        paths.faults().c_str());
        return base::makeError(base::ErrorCode::Injected,
                               "mock GPU: injected fault in %s (call %llu, configured in %s)",
                               operation.c_str(), static_cast<unsigned long long>(count),
                               paths.faults().c_str());
    }
    return base::success();
}

const std::vector<std::string>& faultOperations() {
    static const std::vector<std::string> kOps = {
        "alloc",   "submit",  "pause",  "checkpoint", "read-bo", "write-images",
        "unpause", "restore", "import", "write-bo",   "resume"};
    return kOps;
}

base::Result<void> validateFault(const std::string& operation, const std::string& when) {
    bool known = false;
    std::string all;
    for (const std::string& op : faultOperations()) {
        known = known || op == operation;
        all += (all.empty() ? "" : ", ") + op;
    }
    if (!known)
        return base::makeError(base::ErrorCode::InvalidArgument,
                               "unknown fault operation '%s'; accepted: %s", operation.c_str(),
                               all.c_str());
    char* end = nullptr;
    unsigned long long n = std::strtoull(when.c_str(), &end, 10);
    // strtoull accepts a sign ("-1" is a huge number that never matches): digits only.
    bool digits = !when.empty() && std::isdigit(static_cast<unsigned char>(when[0]));
    if (when != "always" && (!digits || *end != '\0' || n == 0))
        return base::makeError(base::ErrorCode::InvalidArgument,
                               "fault '%s': '%s' is neither a call number (1, 2, ...) nor 'always'",
                               operation.c_str(), when.c_str());
    return base::success();
}

namespace {

/// Appends "<operation> <when><suffix>" to ROOT/faults; the fault must pass validateFault.
base::Result<void> appendFault(const std::string& root, const std::string& operation,
                               const std::string& when, const std::string& suffix) {
    HAL_TRY(validateFault(operation, when));
    MachinePaths paths{root};
    FaultsLock lock;
    HAL_TRY(lock.acquire(paths));
    std::string text;
    if (auto existing = readWholeFile(paths.faults()); existing.ok())
        text = existing.value();
    text += operation + " " + when + suffix + "\n";
    return writeFileAtomic(paths.faults(), text);
}

} // namespace

base::Result<void> addFault(const std::string& root, const std::string& operation,
                            const std::string& when, FaultKind kind) {
    return appendFault(root, operation, when, kind == FaultKind::Stall ? " stall" : "");
}

base::Result<void> addErrnoFault(const std::string& root, const std::string& operation,
                                 const std::string& when, int err) {
    const char* name = err > 0 ? strerrorname_np(err) : nullptr;
    if (!name)
        return base::makeError(base::ErrorCode::InvalidArgument, "fault '%s': %d is no errno",
                               operation.c_str(), err);
    return appendFault(root, operation, when, std::string(" ") + name);
}

uint64_t countedCalls(const std::string& root, const std::string& operation) {
    auto c = readWholeFile(MachinePaths{root}.faultCounters() + "/" + operation);
    return c.ok() ? std::strtoull(c.value().c_str(), nullptr, 10) : 0;
}

base::Result<void> clearFaults(const std::string& root) {
    MachinePaths paths{root};
    FaultsLock lock;
    HAL_TRY(lock.acquire(paths));
    removeTree(paths.faults());
    removeTree(paths.faultCounters());
    removeTree(stallMarker(root));
    return base::success();
}

} // namespace mock
