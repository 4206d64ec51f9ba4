#include "dump_session.h"
#include "proc_fd.h"

#include "base/log.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace frontend {

// ------------------------------------------------------------------------------- guardian

bool DumpSession::startGuardian() {
    if (guardian_)
        return true;
    if (!ctx_.device || ctx_.stage != kStageDump || ctx_.host.guardianDir.empty() ||
        guardianFailed_)
        return false;
    hal::Device* device = ctx_.device.get();
    auto started = DumpGuardian::start(
        GuardianOptions{ctx_.host.guardianDir, ctx_.backendName, [device](int pid, int pidfd) {
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

bool DumpSession::holdsAmdgpuFile(int pid) {
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
            !ctx_.recognizer().recognize(st, std::string(target, static_cast<size_t>(n))).empty()) {
            holds = true;
            break;
        }
    }
    closedir(d);
    return holds;
}

void DumpSession::syncGuardian() {
    if (!ctx_.device || ctx_.stage != kStageDump)
        return;
    std::vector<int> paused = ctx_.device->pausedProcesses();
    if (!guardian_ && (paused.empty() || !startGuardian()))
        return;
    guardian_->track(paused);
}

void DumpSession::dismissGuardian() {
    if (guardian_)
        guardian_->dismiss();
    guardian_.reset();
}

// ----------------------------------------------------------------------------------- dump

int DumpSession::dumpExtFile(int fd, int id) {
    hal::FileRef file;
    file.fd = fd;
    file.id = static_cast<uint32_t>(id);
    if (fd < 0 || fstat(fd, &file.st) != 0)
        return -ENOTSUP;
    file.path = fdPath(fd);
    if (!ctx_.device)
        return ctx_.refuseIfAmdgpu("dump", file.st, file.path);
    auto mine = ctx_.device->claimFile(file);
    if (!mine.ok())
        return ctx_.fail("dump file", std::move(mine).error());
    if (!mine.value())
        return -ENOTSUP;
    ctx_.registerInInventory();
    auto r = ctx_.imageStore();
    if (!r.ok())
        return ctx_.fail("dump file", std::move(r).error());
    auto dumped = ctx_.device->dumpFile(file);
    syncGuardian(); // a criu without device hooks pauses here
    if (!dumped.ok())
        return ctx_.fail("dump file", std::move(dumped).error());
    return 0;
}

int DumpSession::handleDeviceVma(int fd, const struct stat* st) {
    if (!st || fd < 0)
        return -ENOTSUP;
    if (!ctx_.device)
        return ctx_.refuseIfAmdgpu("dump the mapping of", *st, fdPath(fd));
    hal::VmaRef vma;
    vma.fd = fd;
    vma.st = *st;
    vma.path = fdPath(fd);
    auto mine = ctx_.device->claimVma(vma);
    if (!mine.ok())
        return ctx_.fail("device VMA", std::move(mine).error());
    return mine.value() ? 0 : -ENOTSUP;
}

int DumpSession::pauseDevices(int pid) {
    if (!ctx_.device)
        return -ENOTSUP;
    if (ctx_.device->pausesOnlySeizedTasks()) {
        // criu has not seized `pid` yet (it calls this hook first): paused at CHECKPOINT_DEVICES.
        pauseAtCheckpoint_.insert(pid);
        return -ENOTSUP;
    }
    return pauseSeized(pid);
}

int DumpSession::pauseSeized(int pid) {
    // A backend checks the parent of an incremental dump in the image directory before it
    // pauses anything. A store that cannot be set up fails the dump later, at checkpoint, and
    // only when the process uses a GPU.
    (void)ctx_.imageStore();
    // The guardian hears of a process before its pause (criu may die in the middle of it): it
    // starts before the first process that holds an AMD GPU file is paused.
    if (guardian_ || (holdsAmdgpuFile(pid) && startGuardian()))
        guardian_->expect(pid);
    auto paused = ctx_.device->pauseProcess(pid);
    syncGuardian();
    if (!paused.ok())
        return ctx_.fail("pause", std::move(paused).error());
    if (!paused.value())
        return -ENOTSUP;
    ctx_.registerInInventory();
    return 0;
}

int DumpSession::checkpointDevices(int pid) {
    if (ctx_.device && pauseAtCheckpoint_.erase(pid) > 0) {
        if (int rc = pauseSeized(pid); rc != 0)
            return rc; // -ENOTSUP: nothing of the process on this backend
    }
    if (!ctx_.device || ctx_.device->phaseOf(pid) != hal::DumpPhase::Paused)
        return -ENOTSUP;
    auto store = ctx_.imageStore();
    if (!store.ok())
        return ctx_.fail("checkpoint", std::move(store).error());
    auto r = ctx_.device->checkpointProcess(pid);
    syncGuardian(); // a failed checkpoint unpaused the process
    if (!r.ok())
        return ctx_.fail("checkpoint", std::move(r).error());
    return 0;
}

int DumpSession::dumpDevicesLate() {
    // With DUMP_FINISH (criu 4.3+) the dump ends there, where criu says how it went.
    if (!ctx_.device || dumpFinished_ || ctx_.host.abi.has(kDumpFinish))
        return -ENOTSUP;
    dumpFinished_ = true;
    auto r = ctx_.device->finishDump(true);
    dismissGuardian();
    if (!r.ok())
        return ctx_.fail("end of dump", std::move(r).error());
    // Other plugins get this hook too.
    return -ENOTSUP;
}

int DumpSession::dumpFinish(int ret) {
    int rc = finishDumpAtDumpFinish(ret);
    // Last, after the GPU work runs again: criu has written its images, this plugin its own.
    int signedRc = signAtDumpFinish(ret);
    return signedRc != 0 ? signedRc : rc;
}

int DumpSession::finishDumpAtDumpFinish(int ret) {
    if (!ctx_.device)
        return -ENOTSUP;
    bool again = dumpFinished_;
    dumpFinished_ = true;
    if (again && ret != 0)
        HAL_LOG_INFO("%s: criu failed the dump after it had finished (%d): the GPU work of the "
                     "dumped processes runs again",
                     kPluginName, ret);
    auto r = ctx_.device->finishDump(ret == 0);
    dismissGuardian();
    if (r.ok())
        return 0;
    int rc = ctx_.fail("dump finish", std::move(r).error());
    // A dump that succeeded and ends the tasks has nothing left to protect: failing it now would
    // make criu resume tasks whose GPU work could not be resumed.
    if (ret == 0 && ctx_.host.services.finalState() == kTaskDead)
        return 0;
    return rc;
}

// ------------------------------------------------------------------------------------ end

void DumpSession::end(int ret) {
    if (!ctx_.device || dumpFinished_)
        return;
    auto r = ctx_.device->finishDump(ret == 0);
    if (!r.ok())
        HAL_LOG_ERROR("%s: ending the dump: %s", kPluginName, r.error().describe().c_str());
    dismissGuardian();
}

void DumpSession::abandon() {
    if (!ctx_.device)
        return;
    auto r = ctx_.device->finishDump(false);
    if (!r.ok())
        HAL_LOG_ERROR("%s: unpausing after the internal error: %s", kPluginName,
                      r.error().describe().c_str());
    dismissGuardian();
}

} // namespace frontend
