#include "plugin_session.h"
#include "proc_fd.h"

#include "base/log.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

// The dump hooks (DUMP_EXT_FILE, HANDLE_DEVICE_VMA, PAUSE_DEVICES, CHECKPOINT_DEVICES,
// DUMP_DEVICES_LATE, DUMP_FINISH) and the dump's guardian they keep informed.

namespace frontend {

// ------------------------------------------------------------------------------- guardian

bool PluginSession::startGuardian() {
    if (guardian_)
        return true;
    if (!device_ || stage_ != kStageDump || host_.guardianDir.empty() || guardianFailed_)
        return false;
    hal::Device* device = device_.get();
    auto started = DumpGuardian::start(
        GuardianOptions{host_.guardianDir, backendName_, [device](int pid, int pidfd) {
                            return device->releasePaused(pid, pidfd);
                        }});
    if (!started.ok()) {
        guardianFailed_ = true;
        HAL_LOG_WARN("%s: no guardian for this dump (%s): if criu dies before the dump ends, the "
                     "GPU work of the dumped processes stays paused until `criu-amdgpu paused "
                     "release PID`",
                     kPluginName, started.error().describe().c_str());
        return false;
    }
    guardian_ = std::move(started).value();
    HAL_LOG_INFO("%s: guardian %d releases the GPU work of the dumped processes if criu dies "
                 "before the dump ends (its log: %s)",
                 kPluginName, guardian_->pid(), guardian_->logPath().c_str());
    return true;
}

bool PluginSession::holdsAmdgpuFile(int pid) {
    std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = opendir(dir.c_str());
    if (!d)
        return false;
    bool holds = false;
    while (struct dirent* e = readdir(d)) {
        struct stat st {};
        if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, 0) != 0 ||
            !S_ISCHR(st.st_mode))
            continue;
        char target[4096];
        ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
        if (n > 0 &&
            !recognizer().recognize(st, std::string(target, static_cast<size_t>(n))).empty()) {
            holds = true;
            break;
        }
    }
    closedir(d);
    return holds;
}

void PluginSession::syncGuardian() {
    if (!device_ || stage_ != kStageDump)
        return;
    std::vector<int> paused = device_->pausedProcesses();
    if (!guardian_ && (paused.empty() || !startGuardian()))
        return;
    guardian_->track(paused);
}

void PluginSession::dismissGuardian() {
    if (guardian_)
        guardian_->dismiss();
    guardian_.reset();
}

// ----------------------------------------------------------------------------------- dump

int PluginSession::dumpExtFile(int fd, int id) {
    return guard("dump file", [&] { return dumpExtFileUnguarded(fd, id); });
}

int PluginSession::dumpExtFileUnguarded(int fd, int id) {
    hal::FileRef file;
    file.fd = fd;
    file.id = static_cast<uint32_t>(id);
    if (fd < 0 || fstat(fd, &file.st) != 0)
        return -ENOTSUP;
    file.path = fdPath(fd);
    if (!device_)
        return refuseIfAmdgpu("dump", file.st, file.path);
    auto mine = device_->claimFile(file);
    if (!mine.ok())
        return fail("dump file", std::move(mine).error());
    if (!mine.value())
        return -ENOTSUP;
    registerInInventory();
    auto r = imageStore();
    if (!r.ok())
        return fail("dump file", std::move(r).error());
    auto dumped = device_->dumpFile(file);
    syncGuardian(); // a criu without device hooks pauses here
    if (!dumped.ok())
        return fail("dump file", std::move(dumped).error());
    return 0;
}

int PluginSession::handleDeviceVma(int fd, const struct stat* st) {
    return guard("device VMA", [&] { return handleDeviceVmaUnguarded(fd, st); });
}

int PluginSession::handleDeviceVmaUnguarded(int fd, const struct stat* st) {
    if (!st || fd < 0)
        return -ENOTSUP;
    if (!device_)
        return refuseIfAmdgpu("dump the mapping of", *st, fdPath(fd));
    hal::VmaRef vma;
    vma.fd = fd;
    vma.st = *st;
    vma.path = fdPath(fd);
    auto mine = device_->claimVma(vma);
    if (!mine.ok())
        return fail("device VMA", std::move(mine).error());
    return mine.value() ? 0 : -ENOTSUP;
}

int PluginSession::pauseDevices(int pid) {
    return guard("pause", [&] { return pauseDevicesUnguarded(pid); });
}

int PluginSession::pauseDevicesUnguarded(int pid) {
    if (!device_)
        return -ENOTSUP;
    if (device_->pausesOnlySeizedTasks()) {
        // criu has not seized `pid` yet (it calls this hook first): paused at CHECKPOINT_DEVICES.
        pauseAtCheckpoint_.insert(pid);
        return -ENOTSUP;
    }
    return pauseSeized(pid);
}

int PluginSession::pauseSeized(int pid) {
    // A backend checks the parent of an incremental dump in the image directory before it
    // pauses anything. A store that cannot be set up fails the dump later, at checkpoint, and
    // only when the process uses a GPU.
    (void)imageStore();
    // The guardian hears of a process before its pause (criu may die in the middle of it): it
    // starts before the first process that holds an AMD GPU file is paused.
    if (guardian_ || (holdsAmdgpuFile(pid) && startGuardian()))
        guardian_->expect(pid);
    auto paused = device_->pauseProcess(pid);
    syncGuardian();
    if (!paused.ok())
        return fail("pause", std::move(paused).error());
    if (!paused.value())
        return -ENOTSUP;
    registerInInventory();
    return 0;
}

int PluginSession::checkpointDevices(int pid) {
    return guard("checkpoint", [&] { return checkpointDevicesUnguarded(pid); });
}

int PluginSession::checkpointDevicesUnguarded(int pid) {
    if (device_ && pauseAtCheckpoint_.erase(pid) > 0) {
        if (int rc = pauseSeized(pid); rc != 0)
            return rc; // -ENOTSUP: nothing of the process on this backend
    }
    if (!device_ || device_->phaseOf(pid) != hal::DumpPhase::Paused)
        return -ENOTSUP;
    auto store = imageStore();
    if (!store.ok())
        return fail("checkpoint", std::move(store).error());
    auto r = device_->checkpointProcess(pid);
    syncGuardian(); // a failed checkpoint unpaused the process
    if (!r.ok())
        return fail("checkpoint", std::move(r).error());
    return 0;
}

int PluginSession::dumpDevicesLate(int) {
    return guard("end of dump", [&] { return dumpDevicesLateUnguarded(); });
}

int PluginSession::dumpDevicesLateUnguarded() {
    // With DUMP_FINISH (criu 4.3+) the dump ends there, where criu says how it went.
    if (!device_ || dumpFinished_ || host_.abi.has(kDumpFinish))
        return -ENOTSUP;
    dumpFinished_ = true;
    auto r = device_->finishDump(true);
    dismissGuardian();
    if (!r.ok())
        return fail("end of dump", std::move(r).error());
    // Other plugins get this hook too.
    return -ENOTSUP;
}

int PluginSession::dumpFinish(int ret) {
    return guard("dump finish", [&] { return dumpFinishUnguarded(ret); });
}

int PluginSession::dumpFinishUnguarded(int ret) {
    int rc = finishDumpAtDumpFinish(ret);
    // Last, after the GPU work runs again: criu has written its images, this plugin its own.
    int signedRc = signAtDumpFinish(ret);
    return signedRc != 0 ? signedRc : rc;
}

int PluginSession::finishDumpAtDumpFinish(int ret) {
    if (!device_)
        return -ENOTSUP;
    bool again = dumpFinished_;
    dumpFinished_ = true;
    if (again && ret != 0)
        HAL_LOG_INFO("%s: criu failed the dump after it had finished (%d): the GPU work of the "
                     "dumped processes runs again",
                     kPluginName, ret);
    auto r = device_->finishDump(ret == 0);
    dismissGuardian();
    if (r.ok())
        return 0;
    int rc = fail("dump finish", std::move(r).error());
    // A dump that succeeded and ends the tasks has nothing left to protect: failing it now would
    // make criu resume tasks whose GPU work could not be resumed.
    if (ret == 0 && host_.services.finalState() == kTaskDead)
        return 0;
    return rc;
}

} // namespace frontend
