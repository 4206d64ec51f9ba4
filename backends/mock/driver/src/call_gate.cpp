#include "mockgpu/call_gate.h"

#include "mockgpu/machine.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

namespace mock {
namespace {

constexpr auto kClosedGateTimeout = std::chrono::seconds(120);
constexpr auto kPoll = std::chrono::milliseconds(1);
constexpr const char* kHeldSuffix = ".held";
constexpr const char* kCallInfix = ".call-";

/// readlink into a string; empty on failure.
std::string readLinkText(const std::string& path) {
    char buf[512];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

/// The inode in "pid:[4026531836]" (readlink of /proc/.../ns/pid); 0 when unreadable.
uint64_t namespaceInode(const std::string& link) {
    std::string text = readLinkText(link);
    size_t open = text.find('[');
    return open == std::string::npos ? 0 : strtoull(text.c_str() + open + 1, nullptr, 10);
}

/// The last number of the "NSpid:" line of a /proc status file: the pid in the task's own
/// namespace. 0 when there is none.
int innermostPid(const std::string& statusPath) {
    std::ifstream in(statusPath);
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, 6, "NSpid:") != 0)
            continue;
        std::istringstream words(line.substr(6));
        int pid = 0, last = 0;
        while (words >> pid)
            last = pid;
        return last;
    }
    return 0;
}

std::string heldPath(const std::string& root, const TaskKey& key) {
    return MachinePaths{root}.gate() + "/" + key.name() + kHeldSuffix;
}

/// The calling thread as a holder of gates names itself: "<pid namespace inode>-t<tid>".
std::string selfThreadName(uint64_t pidNamespace) {
    return std::to_string(pidNamespace) + "-t" +
           std::to_string(static_cast<long>(syscall(SYS_gettid)));
}

/// Whether the gate of `key` is closed for the calling thread, whose holder name is `thread`: it
/// is closed unless that thread closed it itself (a thread is never frozen by its own pause).
/// readlink only: no file descriptor.
bool closedFor(const std::string& root, const TaskKey& key, const std::string& thread) {
    std::string holder = readLinkText(heldPath(root, key));
    return !holder.empty() && holder != thread;
}

/// Why thread `hostTid` of `hostPid` cannot run on: stopped (traced or by a signal) or frozen by
/// its cgroup. Empty when it can.
std::string whyCannotRun(int hostPid, int hostTid) {
    std::string task = "/proc/" + std::to_string(hostPid) + "/task/" + std::to_string(hostTid);
    std::ifstream statFile(task + "/stat");
    std::string stat((std::istreambuf_iterator<char>(statFile)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size()) {
        char state = stat[close + 2];
        if (state == 't')
            return "stopped by a tracer";
        if (state == 'T')
            return "stopped by a signal";
    }
    std::ifstream cgroups("/proc/" + std::to_string(hostPid) + "/cgroup");
    std::string line;
    while (std::getline(cgroups, line)) {
        size_t first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos)
            continue;
        std::string controllers = line.substr(first + 1, second - first - 1);
        std::string path = line.substr(second + 1);
        std::string value;
        if (controllers == "freezer") {
            std::ifstream in("/sys/fs/cgroup/freezer" + path + "/freezer.state");
            in >> value;
            if (value == "FROZEN" || value == "FREEZING")
                return "frozen by its freezer cgroup (" + path + ")";
        } else if (controllers.empty()) {
            for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
                std::ifstream in(std::string(mount) + path + "/cgroup.freeze");
                if (in >> value && value == "1")
                    return "frozen by its cgroup (" + path + ")";
            }
        }
    }
    return "";
}

/// The threads of `hostPid`: their pid in their own namespace -> their pid in ours.
std::map<int, int> threadsOf(int hostPid) {
    std::map<int, int> out;
    std::string dir = "/proc/" + std::to_string(hostPid) + "/task";
    DIR* d = opendir(dir.c_str());
    if (!d)
        return out;
    while (struct dirent* e = readdir(d)) {
        int hostTid = atoi(e->d_name);
        if (hostTid <= 0)
            continue;
        int nsTid = innermostPid(dir + "/" + e->d_name + "/status");
        out[nsTid ? nsTid : hostTid] = hostTid;
    }
    closedir(d);
    return out;
}

/// The announcements of `key`'s calls: tid -> path.
std::map<int, std::string> announcementsOf(const std::string& root, const TaskKey& key) {
    std::map<int, std::string> out;
    std::string dir = MachinePaths{root}.gate();
    std::string prefix = key.name() + kCallInfix;
    DIR* d = opendir(dir.c_str());
    if (!d)
        return out;
    while (struct dirent* e = readdir(d)) {
        if (strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
            out[atoi(e->d_name + prefix.size())] = dir + "/" + e->d_name;
    }
    closedir(d);
    return out;
}

} // namespace

std::string TaskKey::name() const {
    return std::to_string(pidNamespace) + "-" + std::to_string(pid);
}

base::Result<TaskKey> taskKeyOf(int hostPid) {
    std::string proc = "/proc/" + std::to_string(hostPid);
    TaskKey key{namespaceInode(proc + "/ns/pid"), innermostPid(proc + "/status")};
    if (!key.pidNamespace || !key.pid)
        return base::makeError(base::ErrorCode::NotFound,
                               "cannot read the pid namespace of process %d (%s/ns/pid, NSpid in "
                               "%s/status): is it running?",
                               hostPid, proc.c_str(), proc.c_str());
    return key;
}

GateCall::~GateCall() {
    leave();
}

base::Result<void> GateCall::enter(const std::string& root, const std::string& what) {
    leave();
    uint64_t ns = namespaceInode("/proc/self/ns/pid");
    TaskKey self{ns, getpid()}, parent{ns, getppid()}; // parent 0: outside the namespace
    std::string thread = selfThreadName(ns);
    MachinePaths paths{root};
    std::string announcement = paths.gate() + "/" + self.name() + kCallInfix +
                               std::to_string(static_cast<long>(syscall(SYS_gettid)));
    auto deadline = std::chrono::steady_clock::now() + kClosedGateTimeout;
    for (;;) {
        if (symlink(what.c_str(), announcement.c_str()) != 0) {
            if (errno == EEXIST) {
                unlink(announcement.c_str()); // a call of an earlier life of this thread id
                continue;
            }
            int err = errno;
            // No gate folder yet: make it. Another process (a parent and its child announcing
            // their first calls at once) may make it first: EEXIST from mkdir is success too.
            if (err == ENOENT && access(paths.state().c_str(), F_OK) == 0 &&
                (mkdir(paths.gate().c_str(), 0755) == 0 || errno == EEXIST))
                continue;
            return base::makeErrnoError(base::ErrorCode::Io, err, "cannot announce a call at %s",
                                        announcement.c_str());
        }
        bool closed =
            closedFor(root, self, thread) || (parent.pid > 0 && closedFor(root, parent, thread));
        if (!closed) {
            announcement_ = announcement;
            return base::success();
        }
        unlink(announcement.c_str());
        if (std::chrono::steady_clock::now() > deadline)
            return base::makeError(base::ErrorCode::Kernel,
                                   "the mock GPU calls of this process were held for %lld s by a "
                                   "checkpoint that did not release them (%s)",
                                   static_cast<long long>(kClosedGateTimeout.count()),
                                   heldPath(root, self).c_str());
        std::this_thread::sleep_for(kPoll);
    }
}

void GateCall::leave() {
    if (!announcement_.empty()) {
        unlink(announcement_.c_str());
        announcement_.clear();
    }
}

base::Result<HeldCalls> holdCalls(const std::string& root, int hostPid, int timeoutMs) {
    HAL_TRY_ASSIGN(TaskKey key, taskKeyOf(hostPid));
    MachinePaths paths{root};
    if (mkdir(paths.gate().c_str(), 0755) != 0 && errno != EEXIST)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot create %s",
                                    paths.gate().c_str());
    // The closed gate is a symlink naming the thread that closed it (created aside, renamed into
    // place: a gate left closed by a checkpoint that died is simply taken over).
    std::string path = heldPath(root, key);
    std::string aside = path + ".new-" + std::to_string(getpid());
    unlink(aside.c_str());
    if (symlink(selfThreadName(namespaceInode("/proc/self/ns/pid")).c_str(), aside.c_str()) != 0 ||
        rename(aside.c_str(), path.c_str()) != 0) {
        int e = errno;
        unlink(aside.c_str());
        return base::makeErrnoError(base::ErrorCode::Io, e, "cannot close the gate %s",
                                    path.c_str());
    }
    HeldCalls held{key, {}};
    auto fail = [&](base::Error error) -> base::Result<HeldCalls> {
        auto released = releaseCalls(root, key);
        (void)released; // the error says what went wrong first
        return error;
    };
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
    for (;;) {
        auto calls = announcementsOf(root, key);
        if (calls.empty())
            return held;
        std::map<int, int> threads = threadsOf(hostPid);
        for (const auto& [tid, path] : calls) {
            std::string what = readLinkText(path);
            if (what.empty())
                continue; // the call ended between the listing and the read: nothing to wait for
            auto thread = threads.find(tid);
            if (thread == threads.end()) {
                unlink(path.c_str()); // left by a thread that is gone
                continue;
            }
            std::string entry = "thread " + std::to_string(tid) + ": " + what;
            if (std::find(held.waitedFor.begin(), held.waitedFor.end(), entry) ==
                held.waitedFor.end())
                held.waitedFor.push_back(entry);
            std::string why = whyCannotRun(hostPid, thread->second);
            if (!why.empty())
                return fail(base::makeError(
                    base::ErrorCode::Kernel,
                    "process %d was %s inside a mock GPU driver call (thread %d: %s) before its "
                    "GPU was paused: the mock driver runs in the process and cannot end that "
                    "call. Let criu stop the process (criu 4.0+ pauses the GPU first), or thaw it "
                    "and checkpoint again",
                    hostPid, why.c_str(), tid, what.c_str()));
        }
        if (std::chrono::steady_clock::now() > deadline)
            return fail(base::makeError(
                base::ErrorCode::Kernel,
                "process %d stayed inside a mock GPU driver call for %d ms "
                "(%s)",
                hostPid, timeoutMs, held.waitedFor.empty() ? "?" : held.waitedFor.back().c_str()));
        std::this_thread::sleep_for(kPoll);
    }
}

base::Result<void> releaseCalls(const std::string& root, const TaskKey& key) {
    std::string path = heldPath(root, key);
    if (unlink(path.c_str()) != 0 && errno != ENOENT)
        return base::makeErrnoError(base::ErrorCode::Io, errno, "cannot open the gate %s",
                                    path.c_str());
    return base::success();
}

bool callsHeld(const std::string& root, const TaskKey& key) {
    return !readLinkText(heldPath(root, key)).empty();
}

std::vector<int> descendantsOf(int hostPid) {
    std::vector<int> out;
    std::vector<int> todo{hostPid};
    while (!todo.empty()) {
        int pid = todo.back();
        todo.pop_back();
        for (const auto& [nsTid, hostTid] : threadsOf(pid)) {
            (void)nsTid;
            std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(hostTid) +
                             "/children");
            int child = 0;
            while (in >> child) {
                out.push_back(child);
                todo.push_back(child);
            }
        }
    }
    return out;
}

} // namespace mock
