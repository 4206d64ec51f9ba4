// criu's steps played against the user-space KFD driver with our KFD backend on DriverKernel
// (option kfd-driver), the workload (AMD's thunk, preloaded) in another process: this test
// process dumps it as criu would (it traces the task, takes its device files with pidfd_getfd,
// the backend pauses, checkpoints and copies the BOs through the driver's SDMA engine), kills it,
// resets the machine (its driver ends, a new driver serves a new machine), and restores it into
// a new process, which opens its files through the backend at their old fd numbers, maps every
// device VMA again where updateVmaMap says, resumes, and checks every byte of its BOs; the
// driver then holds the restored process's queues on their old rings, its event, and each
// doorbell the restored process rings lands in the queue's doorbell in the machine's memory.
#include "driver_test_support.h"
#include "kfd/driver_kernel.h"
#include "kfd/driver_protocol.h"
#include "kfd/kfd_device.h"
#include "kfd/real_kernel.h"
#include "known_bytes.h"

#include "formats/image_store.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

namespace {

using kfddriver::EventInfo;
using kfddriver::QueueInfo;
using namespace kfddrivertest;

/// A mapping of a device file of the driver, as /proc/PID/maps shows it to criu.
struct DeviceVma {
    uint64_t addr = 0, len = 0, pgoff = 0;
    int prot = 0;
    std::string path;
};

/// What the dump leaves for the restore: criu's file id of each device fd, each device file's
/// path by its fd, and the device VMAs.
struct Dumped {
    std::map<uint32_t, int> fdOfId;
    std::map<std::string, int> fdOfPath;
    std::vector<DeviceVma> vmas;
};

std::string linkOf(const std::string& proc) {
    char target[PATH_MAX];
    ssize_t n = readlink(proc.c_str(), target, sizeof(target) - 1);
    return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

/// The mappings of `pid` of files of the driver at `root`.
std::vector<DeviceVma> deviceVmas(pid_t pid, const std::string& root) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::string line, prefix = kfddriver::filesPath(root) + "/";
    std::vector<DeviceVma> vmas;
    while (std::getline(maps, line)) {
        size_t path = line.find(prefix);
        if (path == std::string::npos)
            continue;
        DeviceVma v;
        unsigned long long lo = 0, hi = 0, pgoff = 0;
        char perms[5] = {};
        if (sscanf(line.c_str(), "%llx-%llx %4s %llx", &lo, &hi, perms, &pgoff) != 4)
            continue;
        v.addr = lo;
        v.len = hi - lo;
        v.pgoff = pgoff;
        v.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0);
        v.path = line.substr(path);
        vmas.push_back(v);
    }
    return vmas;
}

/// The fds of `pid` that are files of the driver at `root`, in criu's dump order for a ROCm
/// process (it opens /dev/kfd first): /dev/kfd, then the render nodes.
std::vector<std::pair<int, std::string>> deviceFds(pid_t pid, const std::string& root) {
    std::vector<std::pair<int, std::string>> fds;
    std::string dir = "/proc/" + std::to_string(pid) + "/fd/";
    for (int fd = 0; fd < 1024; ++fd) {
        std::string path = linkOf(dir + std::to_string(fd));
        if (path.rfind(kfddriver::filesPath(root) + "/", 0) == 0)
            fds.emplace_back(fd, path);
    }
    std::stable_sort(fds.begin(), fds.end(), [](const auto& a, const auto& b) {
        auto isKfd = [](const std::string& p) {
            return p.size() > 4 && p.substr(p.size() - 4) == "/kfd";
        };
        return isKfd(a.second) > isKfd(b.second);
    });
    return fds;
}

/// The settings of a plugin on the machine of the driver at `root`.
settings::Settings settingsOn(const std::string& root) {
    settings::Settings s;
    s.kfdDriver = root;
    s.kfdSysfsRoot = kfddriver::sysfsPath(root);
    return s;
}

/// Our KFD backend's device as kfd.so makes it with the option kfd-driver: DriverKernel.
std::unique_ptr<kfd::KfdDevice> deviceOn(const settings::Settings& settings,
                                         formats::ImageStore* store, const std::string& shmDir,
                                         std::string* error) {
    auto kernel = kfd::kernelFor(settings, [] { return kfd::makeRealKernel(); });
    if (!kernel.ok()) {
        *error = kernel.error().describe();
        return nullptr;
    }
    hal::DeviceEnv env;
    env.settings = &settings;
    env.images = store;
    kfd::KfdDeviceOptions options;
    options.shmDir = shmDir;
    return std::make_unique<kfd::KfdDevice>(env, kernel.value(), options);
}

/// criu's dump of `pid` (gtest assertions): it traces the task, pauses and checkpoints it through
/// the backend, hands it each device file (its pidfd_getfd copy, with criu's stat and path).
void dump(pid_t pid, const settings::Settings& settings, formats::ImageStore& store,
          const std::string& shmDir, Dumped* out) {
    const std::string& root = settings.kfdDriver;
    out->vmas = deviceVmas(pid, root);
    ASSERT_FALSE(out->vmas.empty());
    ASSERT_EQ(0, ptrace(PTRACE_SEIZE, pid, nullptr, nullptr)) << strerror(errno);
    std::string error;
    auto dev = deviceOn(settings, &store, shmDir, &error);
    ASSERT_TRUE(dev) << error;
    auto paused = dev->pauseProcess(pid);
    ASSERT_TRUE(paused.ok()) << paused.error().describe();
    ASSERT_TRUE(paused.value());
    auto ck = dev->checkpointProcess(pid);
    ASSERT_TRUE(ck.ok()) << ck.error().describe();
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    ASSERT_GE(pidfd, 0) << strerror(errno);
    uint32_t id = 20;
    for (const auto& [fd, path] : deviceFds(pid, root)) {
        hal::FileRef ref;
        ref.fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
        ASSERT_GE(ref.fd, 0) << strerror(errno);
        ref.id = id;
        ASSERT_EQ(0, ::fstat(ref.fd, &ref.st));
        EXPECT_TRUE(S_ISBLK(ref.st.st_mode)) << path << ": criu sees a block node";
        ref.path = linkOf("/proc/self/fd/" + std::to_string(ref.fd));
        auto claimed = dev->claimFile(ref);
        ASSERT_TRUE(claimed.ok() && claimed.value()) << path;
        auto dumped = dev->dumpFile(ref);
        ASSERT_TRUE(dumped.ok()) << path << ": " << dumped.error().describe();
        close(ref.fd);
        out->fdOfId[id++] = fd;
        out->fdOfPath[path] = fd;
    }
    close(pidfd);
    auto fin = dev->finishDump(true);
    ASSERT_TRUE(fin.ok()) << fin.error().describe();
    EXPECT_EQ(dev->phaseOf(pid), hal::DumpPhase::Unpaused);
}

/// What the restored process checks: the workload's buffers.
struct Expected {
    Buffer vram, gtt;
};

std::string failure(const std::string& what, int err = 0) {
    return err ? what + ": " + strerror(err) : what;
}

/// criu's restore, in the restored process itself (no gtest here: a forked child): the files at
/// their old fd numbers, every device VMA mapped again, the resume; then every byte of the
/// buffers, and each queue's doorbell rung through the restored doorbell page. "" or what failed.
std::string restoreHere(const settings::Settings& settings, formats::ImageStore& store,
                        const std::string& shmDir, const Dumped& dumped, const Expected& expected) {
    std::string error;
    auto dev = deviceOn(settings, &store, shmDir, &error);
    if (!dev)
        return error;
    for (const auto& [id, oldFd] : dumped.fdOfId) {
        auto owns = dev->ownsImage(id);
        if (!owns.ok() || !owns.value())
            return "the backend does not own file id " + std::to_string(id);
        auto fd = dev->restoreFile(id);
        if (!fd.ok())
            return fd.error().describe();
        if (dup2(fd.value(), oldFd) != oldFd)
            return failure("dup2 to fd " + std::to_string(oldFd), errno);
        close(fd.value());
    }
    void* doorbells = nullptr;
    for (const DeviceVma& v : dumped.vmas) {
        hal::VmaQuery q;
        q.path = v.path;
        q.addr = v.addr;
        q.oldPgoff = v.pgoff;
        auto answer = dev->updateVmaMap(q);
        if (!answer.ok())
            return answer.error().describe();
        if (!answer.value())
            return "the backend does not know the VMA at " + std::to_string(v.addr) + " of " +
                   v.path;
        // No fd in the answer: criu maps the file it recorded, restored at its old number.
        int fd = answer.value()->fd >= 0 ? answer.value()->fd : dumped.fdOfPath.at(v.path);
        void* at =
            mmap(reinterpret_cast<void*>(v.addr), v.len, v.prot, MAP_SHARED | MAP_FIXED_NOREPLACE,
                 fd, static_cast<off_t>(answer.value()->newPgoff));
        if (at != reinterpret_cast<void*>(v.addr))
            return failure("mapping " + v.path + " again", errno);
        if (answer.value()->fd >= 0)
            close(answer.value()->fd);
        if (v.len == 8192 && v.path.size() > 4 && v.path.substr(v.path.size() - 4) == "/kfd")
            doorbells = at;
    }
    auto resumed = dev->resumeProcess(getpid());
    if (!resumed.ok() || !resumed.value())
        return resumed.ok() ? "not resumed" : resumed.error().describe();
    auto fin = dev->finishRestore(true);
    if (!fin.ok())
        return fin.error().describe();
    for (const auto& [buffer, which] : {std::pair{expected.vram, 0}, std::pair{expected.gtt, 1}}) {
        const auto* bytes = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(buffer.addr));
        for (uint64_t i = 0; i < buffer.size; ++i)
            if (bytes[i] != kfddriver::knownByte(which, i))
                return "byte " + std::to_string(i) + " of buffer " + std::to_string(which) +
                       " is " + std::to_string(bytes[i]);
    }
    // Each queue's doorbell: at its index in the restored doorbell page.
    if (!doorbells)
        return "no doorbell page was mapped again";
    kfddriver::Message answer = askAbout(settings.kfdDriver, kfddriver::Op::ListQueues, getpid());
    std::vector<QueueInfo> queues;
    if (answer.pid != 0 || !kfddriver::decodeQueues(answer.text, &queues))
        return "the driver does not list the restored queues";
    for (const QueueInfo& q : queues) {
        auto* bell = static_cast<uint8_t*>(doorbells) + q.doorbellIndex * 8ull;
        if (q.type == KFD_IOC_QUEUE_TYPE_SDMA)
            *reinterpret_cast<volatile uint32_t*>(bell) = kfddriver::kSdmaDoorbell;
        else
            *reinterpret_cast<volatile uint64_t*>(bell) = kfddriver::kComputeDoorbell;
    }
    return "";
}

/// A process forked to be the restored process: it restores, reports on a pipe, and waits for
/// a byte on another before it exits (so the driver can be asked about it while it lives).
class RestoredProcess {
public:
    RestoredProcess(const std::function<std::string()>& restore) {
        int report[2], go[2];
        if (pipe2(report, O_CLOEXEC) != 0 || pipe2(go, O_CLOEXEC) != 0)
            return;
        pid_ = fork();
        if (pid_ == 0) {
            close(report[0]);
            close(go[1]);
            // The fd numbers the workload's files had are criu's to fill: nothing of this
            // process may take them first (the pipes move up, placeholders fill the rest and are
            // replaced by dup2).
            int reportFd = fcntl(report[1], F_DUPFD_CLOEXEC, 100);
            int goFd = fcntl(go[0], F_DUPFD_CLOEXEC, 100);
            close(report[1]);
            close(go[0]);
            for (int fd = 3; fd < 32; ++fd)
                if (fcntl(fd, F_GETFD) < 0)
                    open("/dev/null", O_RDONLY);
            std::string result = restore();
            result += "\n";
            ssize_t n = write(reportFd, result.data(), result.size());
            char byte;
            n += read(goFd, &byte, 1);
            _exit(n > 0 && result == "\n" ? 0 : 1);
        }
        close(report[1]);
        close(go[0]);
        report_ = report[0];
        go_ = go[1];
    }
    ~RestoredProcess() {
        finish();
        if (report_ >= 0)
            close(report_);
    }
    pid_t pid() const { return pid_; }
    /// What the restore said: "" when it worked.
    std::string result() {
        std::string text;
        char c;
        while (read(report_, &c, 1) == 1) {
            if (c == '\n')
                return text;
            text += c;
        }
        return "the restored process ended without a word (wait status " +
               std::to_string(finish()) + ")";
    }
    /// Lets it exit: its wait status.
    int finish() {
        if (go_ >= 0) {
            // MSG_NOSIGNAL has no pipe form: a child that is gone is seen by waitpid below.
            signal(SIGPIPE, SIG_IGN);
            ssize_t n = write(go_, "x", 1);
            (void)n;
            close(go_);
            go_ = -1;
        }
        int status = -1;
        if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_)
            pid_ = -1;
        return status;
    }

private:
    pid_t pid_ = -1;
    int report_ = -1, go_ = -1;
};

/// The image store of `dir`, its fds numbered 64 or more: the restored process puts the
/// workload's files at their old numbers, which an fd of the store (opened before the fork) must
/// not hold, as criu keeps its own fds above the task's (its service fds).
std::unique_ptr<formats::ImageStore> storeAboveTaskFds(const std::string& dir) {
    std::vector<int> held;
    for (int fd = open("/dev/null", O_RDONLY | O_CLOEXEC); fd >= 0;
         fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) {
        held.push_back(fd);
        if (fd >= 64)
            break;
    }
    auto store = formats::openDirectoryStore(dir);
    for (int fd : held)
        close(fd);
    return store.ok() ? std::move(store).value() : nullptr;
}

TEST(KfdDriverKernel, AWorkloadDumpedByOurBackendIsRestoredIntoANewProcessOnAResetMachine) {
    testsupport::TempDir images, shm;
    auto store = storeAboveTaskFds(images.path());
    ASSERT_TRUE(store);
    Dumped dumped;
    Expected expected;
    Printed printed;
    {
        TwoGpuDriver machine;
        ASSERT_NO_FATAL_FAILURE(machine.start());
        std::unique_ptr<Child> workload = machine.runWorkload(&printed);
        expected = {printedBuffer(printed, "vram"), printedBuffer(printed, "gtt")};
        ASSERT_FALSE(::testing::Test::HasFailure());
        ASSERT_NO_FATAL_FAILURE(
            dump(workload->pid(), settingsOn(machine.root()), *store, shm.path(), &dumped));
        // The workload dies with the machine it ran on: nothing of it survives but the images.
        ASSERT_EQ(0, kill(workload->pid(), SIGKILL));
        int status = workload->wait();
        EXPECT_TRUE(WIFSIGNALED(status)) << "wait status " << status;
        machine.end();
    }
    TwoGpuDriver machine;
    ASSERT_NO_FATAL_FAILURE(machine.start());
    settings::Settings settings = settingsOn(machine.root());
    RestoredProcess restored(
        [&] { return restoreHere(settings, *store, shm.path(), dumped, expected); });
    ASSERT_GT(restored.pid(), 0);
    EXPECT_EQ("", restored.result());

    // The new machine holds the restored process's queues on the workload's rings, its event,
    // and the doorbells it rang in each queue's doorbell in the machine's memory.
    std::vector<QueueInfo> queues = listed<QueueInfo>(machine.root(), kfddriver::Op::ListQueues,
                                                      restored.pid(), kfddriver::decodeQueues);
    ASSERT_EQ(2u, queues.size());
    std::vector<uint64_t> rings;
    int memory = open(kfddriver::memoryNodePath(machine.root()).c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(memory, 0) << strerror(errno);
    for (const QueueInfo& q : queues) {
        rings.push_back(q.ringBase);
        ASSERT_NE(QueueInfo::kNoMemory, q.doorbellMemoryOffset);
        std::vector<uint8_t> bell = memoryBytes(memory, q.doorbellMemoryOffset, 8);
        uint64_t value = 0;
        memcpy(&value, bell.data(), q.type == KFD_IOC_QUEUE_TYPE_SDMA ? 4 : 8);
        EXPECT_EQ(q.type == KFD_IOC_QUEUE_TYPE_SDMA ? uint64_t{kfddriver::kSdmaDoorbell}
                                                    : kfddriver::kComputeDoorbell,
                  value)
            << "queue " << q.id << " (type " << q.type << ")";
    }
    close(memory);
    std::sort(rings.begin(), rings.end());
    std::vector<uint64_t> printedRings = {number(printed["queue compute"].at(0)),
                                          number(printed["queue sdma"].at(0))};
    std::sort(printedRings.begin(), printedRings.end());
    EXPECT_EQ(printedRings, rings);
    uint64_t eventPage = 0;
    std::vector<EventInfo> events =
        listed<EventInfo>(machine.root(), kfddriver::Op::ListEvents, restored.pid(),
                          kfddriver::decodeEvents, &eventPage);
    ASSERT_EQ(1u, events.size());
    EXPECT_EQ(number(printed["event"].at(0)), events[0].id);
    EXPECT_EQ(1u, events[0].signaled);
    EXPECT_NE(0u, eventPage);
    int status = restored.finish();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
    machine.end();
}

} // namespace
