// KfdDevice, dump side: finding a file's process, PROCESS_INFO / CHECKPOINT / UNPAUSE, BO
// contents and images.
#include "kfd/kfd_device.h"

#include "base/log.h"
#include "coordination/process_pin.h"

#include <fcntl.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

namespace kfd {

base::Result<KfdDevice::DumpedProcess*> KfdDevice::dumped(int pid) {
    auto it = dumped_.find(pid);
    if (it == dumped_.end())
        return base::makeError(base::ErrorCode::PhaseOrder, "kfd: process %d was not paused", pid);
    return &it->second;
}

base::Result<bool> KfdDevice::holdsFile(int pid, const hal::FileRef& file) {
    std::vector<ProcFd> fds;
    if (kernel_->listProcessFds(pid, &fds) < 0)
        return false; // gone, or not ours to look at
    struct stat st = deviceStat(file.fd);
    for (const ProcFd& f : fds) {
        if (!S_ISCHR(f.st.st_mode) || f.st.st_rdev != st.st_rdev)
            continue;
        int copy = kernel_->pidGetFd(pid, f.fd);
        if (copy < 0) {
            scanError_ = base::strFormat("pidfd_getfd of fd %d of process %d failed: %s", f.fd, pid,
                                         strerror(-copy));
            scanErrno_ = -copy;
            continue;
        }
        KernelFd guard(kernel_.get(), copy);
        if (kernel_->sameFile(file.fd, copy) == 1)
            return true;
    }
    return false;
}

base::Result<int> KfdDevice::processOfFileImpl(const hal::FileRef& file) {
    // The KFD file of a process criu already paused: compare open files, not paths (a process
    // may hold several GPUs' render nodes, and several processes the same device).
    for (auto& [pid, p] : dumped_) {
        if (kernel_->sameFile(file.fd, p.kfdFd.get()) == 1) {
            kfdFileIdOfPid_[pid] = file.id;
            return pid;
        }
    }
    for (auto& [pid, p] : dumped_) {
        HAL_TRY_ASSIGN(bool holds, holdsFile(pid, file));
        if (holds)
            return pid;
    }
    // criu without PAUSE_DEVICES: find the holder among all processes (host pids).
    std::vector<int> pids;
    int r = kernel_->listPids(&pids);
    if (r < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -r, "kfd: cannot list processes");
    struct stat kfdSt {};
    bool isKfd =
        kernel_->stat(kfdPath(), &kfdSt) == 0 && kfdSt.st_rdev == deviceStat(file.fd).st_rdev;
    for (int pid : pids) {
        HAL_TRY_ASSIGN(bool holds, holdsFile(pid, file));
        if (!holds)
            continue;
        if (isKfd)
            kfdFileIdOfPid_[pid] = file.id;
        return pid;
    }
    std::string why = scanError_.empty() ? "" : " (" + scanError_ + ")";
    return base::makeErrnoError(
        base::ErrorCode::NotFound, scanErrno_,
        "kfd: no process holds %s (file id %u); cannot tell whose GPU state "
        "it is%s",
        file.path.c_str(), file.id, why.c_str());
}

base::Result<int> KfdDevice::kfdFdOfTask(int pid) {
    struct stat kfdSt;
    if (int r = kernel_->stat(kfdPath(), &kfdSt); r < 0)
        return base::makeErrnoError(base::ErrorCode::NotPresent, -r, "kfd: cannot stat %s",
                                    kfdPath().c_str());
    std::vector<ProcFd> fds;
    if (int r = kernel_->listProcessFds(pid, &fds); r < 0)
        return base::makeErrnoError(
            r == -ENOENT || r == -ESRCH ? base::ErrorCode::NotFound : base::ErrorCode::Kernel, -r,
            "kfd: cannot list the files of process %d (/proc/%d/fd)", pid, pid);
    for (const ProcFd& f : fds)
        if (S_ISCHR(f.st.st_mode) && f.st.st_rdev == kfdSt.st_rdev)
            return f.fd;
    return -1;
}

base::Result<bool> KfdDevice::pauseImpl(int pid) {
    HAL_TRY_ASSIGN(int taskFd, kfdFdOfTask(pid));
    if (taskFd < 0)
        return false;
    HAL_TRY(refuseOwnRenderBos(pid)); // before PROCESS_INFO pauses the queues
    int copy = kernel_->pidGetFd(pid, taskFd);
    if (copy < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -copy,
                                    "kfd: cannot get fd %d (%s) of process %d (pidfd_getfd)",
                                    taskFd, kfdPath().c_str(), pid);
    DumpedProcess p;
    p.kfdFd = KernelFd(kernel_.get(), copy);
    auto info = criuProcessInfo(*kernel_, copy);
    if (!info.ok()) {
        if (info.error().sysErrno() == ENODEV)
            return false; // a KFD file without any GPU: nothing to checkpoint
        return std::move(info.error().addContext(base::strFormat(
            "while pausing the GPU queues of process %d (its %s)", pid, kfdPath().c_str())));
    }
    p.info = info.value();
    HAL_LOG_INFO("kfd: process %d (pid %u in its namespace): %u GPUs, %u BOs, %u objects, %llu "
                 "bytes of private data",
                 pid, p.info.pid, p.info.numDevices, p.info.numBos, p.info.numObjects,
                 static_cast<unsigned long long>(p.info.privDataSize));
    dumped_.emplace(pid, std::move(p));
    return true;
}

base::Result<topology::Topology>
KfdDevice::entriesTopology(const DumpedProcess& p, const topology::Topology& local, int pid) {
    topology::Topology t;
    t.source = base::strFormat("process %d", pid);
    std::set<uint32_t> actuals;
    for (const auto& [user, actual] : p.userToActual)
        actuals.insert(actual);
    for (const topology::Node& node : local.nodes) {
        if (node.gpuId == 0) {
            t.nodes.push_back(node);
            continue;
        }
        if (!actuals.count(node.gpuId))
            continue; // a GPU this process cannot use (hidden by its cgroup)
        topology::Node copy = node;
        for (const auto& [user, actual] : p.userToActual)
            if (actual == node.gpuId)
                copy.gpuId = user;
        t.nodes.push_back(std::move(copy));
    }
    for (const auto& [user, actual] : p.userToActual)
        if (!local.findGpu(actual))
            return base::makeError(base::ErrorCode::Topology,
                                   "kfd: GPU %s of process %d is not in this machine's topology "
                                   "(%s)",
                                   topology::gpuIdHex(actual).c_str(), pid, local.source.c_str());
    return t;
}

base::Result<void> KfdDevice::collectObjectsImpl(int pid) {
    HAL_TRY_ASSIGN(DumpedProcess * p, dumped(pid));
    HAL_TRY_ASSIGN_CONTEXT(CheckpointData data, criuCheckpoint(*kernel_, p->kfdFd.get(), p->info),
                           "while checkpointing the KFD state of process %d (its %s)", pid,
                           kfdPath().c_str());
    p->dmabufs.reserve(data.bos.size());
    for (const kfd_criu_bo_bucket& bo : data.bos)
        if (boHasContents(bo.alloc_flags) && bo.dmabuf_fd != kInvalidFd)
            p->dmabufs.emplace_back(kernel_.get(), static_cast<int>(bo.dmabuf_fd));
    for (const kfd_criu_device_bucket& d : data.devices)
        p->userToActual[d.user_gpu_id] = d.actual_gpu_id;
    for (size_t i = 0; i < data.bos.size(); ++i) {
        const kfd_criu_bo_bucket& bo = data.bos[i];
        if (!p->userToActual.count(bo.gpu_id))
            return base::makeError(base::ErrorCode::Kernel,
                                   "kfd: the kernel reported BO %zu of process %d on GPU %s, "
                                   "which is not among its devices",
                                   i, pid, topology::gpuIdHex(bo.gpu_id).c_str());
        if (boHasContents(bo.alloc_flags) && bo.size > 0 && bo.dmabuf_fd == kInvalidFd)
            return base::makeError(base::ErrorCode::Kernel,
                                   "kfd: the kernel gave no dmabuf fd for %s BO %zu of GPU %s",
                                   boKindName(bo.alloc_flags), i,
                                   topology::gpuIdHex(bo.gpu_id).c_str());
    }
    p->data = std::move(data);
    HAL_TRY_ASSIGN_CONTEXT(const topology::Topology* local, localTopology(),
                           "while describing the GPUs of process %d", pid);
    HAL_TRY_ASSIGN(p->entries, entriesTopology(*p, *local, pid));
    HAL_TRY_ASSIGN(p->shm, readProcessHsakmtShm(options_.procRoot, pid));
    return base::success();
}

base::Result<void> KfdDevice::streamContents(int pid, DumpedProcess& p, uint32_t id) {
    HAL_LOG_DEBUG("kfd: saving the BO contents of process %d", pid);
    HAL_TRY_ASSIGN(const topology::Topology* local, localTopology());
    std::vector<GpuTransfer> jobs;
    for (const kfd_criu_device_bucket& d : p.data->devices) {
        GpuTransfer job;
        job.gpuId = d.user_gpu_id;
        job.fileId = id;
        job.bos.reserve(static_cast<size_t>(
            std::count_if(p.data->bos.begin(), p.data->bos.end(),
                          [&](const auto& bo) { return bo.gpu_id == d.user_gpu_id; })));
        for (size_t i = 0; i < p.data->bos.size(); ++i) {
            const kfd_criu_bo_bucket& bo = p.data->bos[i];
            if (bo.gpu_id == d.user_gpu_id && boHasContents(bo.alloc_flags) && bo.size > 0)
                job.bos.push_back({static_cast<uint32_t>(i), bo.size,
                                   static_cast<int>(bo.dmabuf_fd), bo.alloc_flags, bo.addr,
                                   std::nullopt});
        }
        // Every GPU gets its lane, one without contents too (CRIU opens each GPU's pages file at
        // restore).
        if (job.bos.empty()) {
            jobs.push_back(std::move(job));
            continue;
        }
        const topology::Node* node = local->findGpu(d.actual_gpu_id);
        if (!node || node->renderMinor() < 0)
            return base::makeError(
                base::ErrorCode::Topology, "kfd: GPU %s has no render node in %s",
                topology::gpuIdHex(d.actual_gpu_id).c_str(), local->source.c_str());
        job.renderPath = renderPath(node->renderMinor());
        jobs.push_back(std::move(job));
    }
    uint64_t each = stagingPerWorker(kfdStagingBytes(settings()), jobs.size());
    std::vector<hal::ContentsLane> lanes;
    for (const GpuTransfer& job : jobs)
        lanes.push_back(dumpLaneOf(*kernel_, job, each));
    HAL_TRY_ASSIGN(hal::ContentsFiles files, saveBoContents(id, lanes));
    if (files == hal::ContentsFiles::Ours) {
        p.layout = ContentsLayout::PerBo;
        for (size_t g = 0; g < jobs.size(); ++g)
            for (size_t k = 0; k < jobs[g].bos.size(); ++k)
                if (lanes[g].bos[k].checksum)
                    p.boSums[jobs[g].bos[k].index] = *lanes[g].bos[k].checksum;
    } else {
        for (size_t g = 0; g < jobs.size(); ++g)
            p.digests.push_back({jobs[g].gpuId, lanes[g].bytes, *lanes[g].checksum});
    }
    p.streamed = true;
    p.dmabufs.clear(); // the contents are out; let the kernel drop its references
    return base::success();
}

base::Result<void> KfdDevice::streamContentsImpl(int pid) {
    HAL_TRY_ASSIGN(DumpedProcess * p, dumped(pid));
    auto id = kfdFileIdOfPid_.find(pid);
    if (id == kfdFileIdOfPid_.end()) {
        // criu 4.0+ checkpoints devices before it hands over files, and the pages files are
        // named by criu's file id: the copy waits for the KFD file (queues stay paused).
        HAL_LOG_DEBUG("kfd: BO contents of process %d follow with its KFD file", pid);
        return base::success();
    }
    return streamContents(pid, *p, id->second);
}

base::Result<void> KfdDevice::writeFileImagesImpl(const hal::FileRef& file, int pid) {
    HAL_TRY_ASSIGN(DumpedProcess * p, dumped(pid));
    HAL_TRY_ASSIGN(formats::ImageStore * store, images());
    // Which file this is comes from /dev/kfd's device number: a failed stat is an error, not a
    // render node (the fault sweep of issue 55 found it called "render node /dev/kfd").
    struct stat kfdSt {};
    if (int r = kernel_->stat(kfdPath(), &kfdSt); r < 0)
        return base::makeErrnoError(base::ErrorCode::Kernel, -r,
                                    "kfd: cannot stat %s to tell whether %s is the KFD file",
                                    kfdPath().c_str(), file.path.c_str());
    struct stat st = deviceStat(file.fd);
    bool isKfd = kfdSt.st_rdev == st.st_rdev;
    if (!isKfd) {
        HAL_TRY_ASSIGN(const topology::Topology* local, localTopology());
        int minor = static_cast<int>(::minor(st.st_rdev));
        const topology::Node* node = local->findRenderMinor(minor);
        if (!node)
            return base::makeError(base::ErrorCode::Topology,
                                   "kfd: render node %s (minor %d) is no GPU of %s",
                                   file.path.c_str(), minor, local->source.c_str());
        uint32_t user = node->gpuId;
        for (const auto& [u, actual] : p->userToActual)
            if (actual == node->gpuId)
                user = u;
        formats::RenderNodeImage image;
        image.gpuId = user;
        image.id = file.id;
        image.renderMinor = static_cast<uint32_t>(minor);
        return formats::writeRenderNodeImage(*store, image);
    }
    if (!p->streamed)
        HAL_TRY(streamContents(pid, *p, file.id));
    KfdImage image;
    image.pid = p->info.pid;
    image.topology = p->entries;
    image.bos.reserve(p->data->bos.size());
    for (size_t i = 0; i < p->data->bos.size(); ++i) {
        const kfd_criu_bo_bucket& bo = p->data->bos[i];
        image.bos.push_back({bo.addr, bo.size, bo.offset, bo.gpu_id, bo.alloc_flags, {}});
        if (auto sum = p->boSums.find(static_cast<uint32_t>(i)); sum != p->boSums.end())
            image.bos.back().checksum = sum->second;
    }
    image.layout = p->layout;
    image.numObjects = p->data->numObjects;
    if (p->shm) {
        image.sharedMemSize = p->shm->size;
        image.sharedMemMagic = p->shm->magic;
    }
    image.privData = p->data->privData;
    image.checksums = p->digests;
    return writeKfdImage(*store, formats::kfdImageName(file.id), image);
}

/// How often UNPAUSE is asked before a dump gives up on a process.
constexpr int kUnpauseTries = 3;

base::Result<void> KfdDevice::unpauseImpl(int pid) {
    HAL_TRY_ASSIGN(DumpedProcess * p, dumped(pid));
    // A failed UNPAUSE leaves the process's GPU work stopped for good: it is asked again, a few
    // times, before the dump gives up on it (the fault sweep, tests/kfd/fault_sweep_test.cpp,
    // found a single failed UNPAUSE leaving the process paused). EINVAL on a later try means its
    // queues run already: the earlier try did its work before it failed.
    auto r = criuUnpause(*kernel_, p->kfdFd.get());
    for (int again = 1; !r.ok() && again < kUnpauseTries; ++again) {
        HAL_LOG_WARN("kfd: unpausing the GPU queues of process %d failed (%s); trying again", pid,
                     r.error().describe().c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(again * 5));
        r = criuUnpause(*kernel_, p->kfdFd.get());
        if (!r.ok() && r.error().sysErrno() == EINVAL)
            r = base::success();
    }
    dumped_.erase(pid);
    kfdFileIdOfPid_.erase(pid);
    if (!r.ok())
        return std::move(r.error().addContext(
            base::strFormat("while unpausing the GPU queues of process %d (its %s; %d tries)", pid,
                            kfdPath().c_str(), kUnpauseTries)));
    return base::success();
}

base::Result<hal::PausedRelease> KfdDevice::releasePausedImpl(int pid, int pidfd) {
    // With a pin, every step that names the pid is preceded by a check that the paused process
    // still holds it (coordination/process_pin.h): one that exited is Gone, whoever has its pid
    // now.
    auto exited = [pidfd] { return pidfd >= 0 && !coordination::pinnedProcessAlive(pidfd); };
    if (exited())
        return hal::PausedRelease::Gone;
    auto taskFd = kfdFdOfTask(pid);
    if (!taskFd.ok() && taskFd.error().code() == base::ErrorCode::NotFound)
        return hal::PausedRelease::Gone;
    HAL_TRY(taskFd);
    if (exited()) // the files just listed may be those of a process given its pid since
        return hal::PausedRelease::Gone;
    if (*taskFd < 0)
        return hal::PausedRelease::NoGpu;
    // kfd_ioctl serves a CRIU op only to the process itself or to its ptrace parent: criu was
    // that parent, and its death detached the process. This process becomes it for the call.
    if (int r = kernel_->ptraceSeize(pid); r < 0) {
        if (r == -ESRCH)
            return hal::PausedRelease::Gone;
        return base::makeErrnoError(base::ErrorCode::Kernel, -r,
                                    "kfd: cannot attach to process %d (PTRACE_SEIZE), which KFD "
                                    "requires of whoever unpauses it; is another tracer (a criu "
                                    "still running) holding it?",
                                    pid);
    }
    // Attached, the process cannot be reaped by anyone else: a check now holds until the detach.
    if (exited()) {
        // What was attached holds the pid since the paused process exited: it is neither stopped
        // nor asked anything; the kernel lets it go when this process ends (no PTRACE_DETACH,
        // which would need to stop it first).
        HAL_LOG_WARN("kfd: process %d exited while it was being attached; the process that holds "
                     "pid %d now is left alone (attached, never stopped, until this process ends)",
                     pid, pid);
        return hal::PausedRelease::Gone;
    }
    int copy = kernel_->pidGetFd(pid, *taskFd);
    base::Result<hal::PausedRelease> outcome = hal::PausedRelease::Unpaused;
    if (copy == -ESRCH) {
        outcome = hal::PausedRelease::Gone;
    } else if (copy < 0) {
        outcome = base::makeErrnoError(base::ErrorCode::Kernel, -copy,
                                       "kfd: cannot get fd %d (%s) of process %d (pidfd_getfd)",
                                       *taskFd, kfdPath().c_str(), pid);
    } else {
        auto r = criuUnpause(*kernel_, copy);
        // criu_unpause answers EINVAL when the process's queues are not paused.
        if (!r.ok() && r.error().sysErrno() == EINVAL)
            outcome = hal::PausedRelease::NotPaused;
        else if (!r.ok())
            outcome = std::move(r).error();
        kernel_->close(copy);
    }
    if (int r = kernel_->ptraceDetach(pid); r == -ETIMEDOUT)
        HAL_LOG_WARN("kfd: process %d did not stop for PTRACE_DETACH in time (a frozen cgroup, "
                     "an uninterruptible sleep): it stays attached to this process, never "
                     "stopped, until this process ends, which lets it go",
                     pid);
    else if (r < 0 && r != -ESRCH)
        HAL_LOG_WARN("kfd: letting process %d go after unpausing it (PTRACE_DETACH): %s", pid,
                     strerror(-r));
    return outcome;
}

} // namespace kfd
