// The fault sweep of the KFD backend (issue 55): every kernel and libdrm call of a dump and of a
// restore fails once with each errno the kernel answers it with; each run must fail with an error
// naming the call, the GPU or file and the step (or recover), leave the process running unpaused
// (dump) or nothing of it on the GPU (restore), and leave no fd, mapping or libdrm object behind.
// FAULT_SWEEP=all runs every call; CI runs a fixed sample (tests/README.md).
#include "fault_device_nodes.h"
#include "fault_sweep.h"
#include "faulting_libdrm.h"
#include "kfd_steps.h"

#include "kfd/kfd_criu.h"
#include "kfd/kfd_uapi.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cerrno>

using namespace fakekfd;
using faultsweep::faultable;
using faultsweep::FaultPlan;

namespace {

/// kfd::KernelInterface in front of the fake kernel, every call through a FaultPlan.
class FaultingKernel final : public kfd::KernelInterface {
public:
    FaultingKernel(std::shared_ptr<FakeKernel> inner, FaultPlan& plan)
        : inner_(std::move(inner)), plan_(plan), nodes_(inner_->deviceNodes(), plan),
          libdrm_(inner_->libdrm(), plan) {}

    int open(const std::string& path, int flags) override {
        return faultable(plan_, "open", [&] { return inner_->open(path, flags); });
    }
    int close(int fd) override {
        return faultable(plan_, "close", [&] { return inner_->close(fd); });
    }
    int dup(int fd) override {
        return faultable(plan_, "fcntl(F_DUPFD_CLOEXEC)", [&] { return inner_->dup(fd); });
    }
    int ioctl(int fd, unsigned long request, void* arg) override {
        std::string name = faultsweep::ioctlName(request);
        if (request == AMDKFD_IOC_CRIU_OP)
            name += std::string("(") + kfd::criuOpName(static_cast<kfd_ioctl_criu_args*>(arg)->op) +
                    ")";
        // The real interface retries an ioctl on EINTR and EAGAIN (real_kernel.cpp), as here.
        return faultsweep::retriedIoctl(plan_, name,
                                        [&] { return inner_->ioctl(fd, request, arg); });
    }
    int stat(const std::string& path, struct stat* st) override {
        return faultable(plan_, "stat", [&] { return inner_->stat(path, st); });
    }
    int fstat(int fd, struct stat* st) override {
        return faultable(plan_, "fstat", [&] { return inner_->fstat(fd, st); });
    }
    topology::DeviceNodeCalls& deviceNodes() override { return nodes_; }
    int sameFile(int fdA, int fdB) override {
        return faultable(plan_, "kcmp", [&] { return inner_->sameFile(fdA, fdB); });
    }
    int listPids(std::vector<int>* pids) override {
        return faultable(plan_, "readdir(/proc)", [&] { return inner_->listPids(pids); });
    }
    int listProcessFds(int pid, std::vector<kfd::ProcFd>* fds) override {
        return faultable(plan_, "readdir(/proc/PID/fd)",
                         [&] { return inner_->listProcessFds(pid, fds); });
    }
    int pidGetFd(int pid, int targetFd) override {
        return faultable(plan_, "pidfd_getfd", [&] { return inner_->pidGetFd(pid, targetFd); });
    }
    int ptraceSeize(int pid) override {
        return faultable(plan_, "ptrace(PTRACE_SEIZE)", [&] { return inner_->ptraceSeize(pid); });
    }
    int ptraceDetach(int pid) override {
        return faultable(plan_, "ptrace(PTRACE_DETACH)", [&] { return inner_->ptraceDetach(pid); });
    }
    sdma::Libdrm& libdrm() override { return libdrm_; }

private:
    std::shared_ptr<FakeKernel> inner_;
    FaultPlan& plan_;
    faultsweep::FaultingDeviceNodes nodes_;
    faultsweep::FaultingLibdrm libdrm_;
};

/// The errnos the kernel (or libdrm) answers `call` with, beyond EIO, ENOMEM, EINTR, EAGAIN and
/// EFAULT (which every call can answer). Where a function is named, it is the kernel's.
std::vector<int> kfdErrnos(const std::string& call) {
    std::vector<int> e = faultsweep::commonErrnos();
    auto add = [&](std::initializer_list<int> more) { e.insert(e.end(), more); };
    if (faultsweep::releasingCall(call))
        return e;
    if (call == "open")
        // A node gone (ENOENT), the devices cgroup (EPERM), permissions (EACCES), the driver
        // unbound (ENODEV: kfd_open without a kfd device), the fd table full (EMFILE).
        add({ENOENT, EPERM, EACCES, ENODEV, EMFILE});
    else if (call.starts_with("ioctl AMDKFD_IOC_CRIU_OP")) {
        // kfd_ioctl: EACCES without CAP_CHECKPOINT_RESTORE, EBADF from a caller that is neither
        // the process nor its ptrace parent; criu_* EINVAL for bad arguments and state, ESRCH
        // (criu_resume: kfd_lookup_process_by_pid finds no process).
        add({EACCES, EBADF, EINVAL, ESRCH});
        if (call.find("RESTORE") != std::string::npos)
            add({ENOSPC}); // criu_restore_bo: idr_alloc of a handle (ENOSPC when full)
    } else if (call.starts_with("ioctl ")) {
        // drm_ioctl: ENODEV after the GPU is unplugged (drm_dev_enter), EINVAL, ENOENT for a GEM
        // handle that is gone, EACCES for a render-only ioctl's permission check.
        add({ENODEV, EINVAL, ENOENT, EACCES});
        if (call.find("PRIME_HANDLE_TO_FD") != std::string::npos)
            add({EMFILE});
    } else if (call == "pidfd_getfd")
        add({EBADF, ESRCH, EPERM,
             EMFILE}); // pidfd_getfd(2): no such fd, task gone, ptrace_may_access
    else if (call == "kcmp")
        add({EBADF, ESRCH, EPERM});
    else if (call.starts_with("readdir"))
        add({ENOENT, EACCES});
    else if (call == "ptrace(PTRACE_SEIZE)")
        add({EPERM, ESRCH});
    else if (call == "ptrace(PTRACE_DETACH)")
        add({ESRCH, ETIMEDOUT}); // ETIMEDOUT: did not stop within the bound (kernel_interface.h)
    else if (call == "stat" || call == "fstat")
        add({ENOENT, EACCES, EBADF});
    else if (call == "lstat")
        // Not ENOENT: an absent render node is one the restore makes, and the fake's node is
        // there, so mknod answers EEXIST (a clear error of its own, but not one of lstat).
        add({EACCES, EBADF});
    else if (call == "fcntl(F_DUPFD_CLOEXEC)")
        add({EMFILE});
    else if (call == "mknod" || call == "mkdir")
        add({EEXIST, EPERM, EROFS, ENOSPC});
    else if (call == "amdgpu_device_initialize")
        add({ENODEV, EACCES});
    else if (call == "amdgpu_bo_import" || call == "amdgpu_create_bo_from_user_mem" ||
             call == "amdgpu_bo_list_create" || call == "amdgpu_bo_cpu_map" ||
             call == "amdgpu_bo_alloc" || call == "amdgpu_cs_ctx_create")
        add({EINVAL, ENODEV});
    else if (call == "amdgpu_va_range_alloc" || call == "amdgpu_bo_va_op")
        add({EINVAL, ENOSPC}); // amdgpu_vm_bo_map: drm_mm without room
    else if (call == "amdgpu_cs_submit")
        add({ECANCELED, ENODEV, EINVAL}); // amdgpu_cs_ioctl: ECANCELED for a context a reset hit
    else if (call == "amdgpu_cs_query_fence_status")
        add({ETIME, ECANCELED, ENODEV});
    return e;
}

/// How the backend names a call in its messages.
std::vector<std::string> kfdCallWords(const std::string& call) {
    std::vector<std::string> words = faultsweep::callWords(call);
    if (call.starts_with("readdir(/proc/PID/fd)"))
        words.push_back("/fd)");
    if (call.starts_with("fcntl(F_DUPFD_CLOEXEC)"))
        words.push_back("F_DUPFD_CLOEXEC");
    if (call == "lstat")
        words.push_back("cannot stat");
    return words;
}

/// Every kind of BO on one GPU, small: a run costs its set-up more than its copies.
ProcessSpec smallBosOfEveryKind() {
    ProcessSpec spec;
    for (uint32_t flags : {kVram, kVramPublic, kGtt, kGttAql, kUserptr, kDoorbell, kMmio})
        spec.bos.push_back({0,
                            flags == kDoorbell ? kDoorbellSlice
                            : flags == kMmio   ? 4096u
                                               : 65536u,
                            flags});
    spec.objects = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0xaa, 0x55};
    spec.numObjects = 5;
    return spec;
}

constexpr int kPid = 300;

/// What a run may leave: in this process, and in the fake kernel.
struct Counts {
    explicit Counts(FakeKernel& k)
        : fds(faultsweep::openFdsOfThisProcess()), maps(faultsweep::mappingsOfThisProcess()),
          kernelFds(k.openFdCount()), nodes(k.madeNodes().size()) {}
    /// Appends to `left` what differs from `before` now.
    static void compare(const Counts& before, FakeKernel& k, std::vector<std::string>& left) {
        Counts now(k);
        faultsweep::expectSame(left, "fds of the fake kernel", before.kernelFds, now.kernelFds);
        faultsweep::expectSame(left, "device nodes made", before.nodes, now.nodes);
        faultsweep::expectSame(left, "libdrm objects", 0, k.liveDrmObjects());
        faultsweep::expectSame(left, "fds of this process", before.fds, now.fds);
        faultsweep::expectSame(left, "mappings of this process", before.maps, now.maps);
    }
    size_t fds, maps, kernelFds, nodes;
};
constexpr int kRestoredPid = 301;

/// The devices KFD tests make: a machine of one GPU (its content lane runs alone, so the calls
/// come in the same order every run).
std::unique_ptr<kfd::KfdDevice> deviceOn(TestMachine& m, formats::ImageStore* images,
                                         std::shared_ptr<kfd::KernelInterface> kernel) {
    hal::DeviceEnv env;
    env.settings = &m.settings;
    env.images = images;
    kfd::KfdDeviceOptions options;
    options.shmDir = m.shmDir;
    options.procRoot = m.procRoot;
    return std::make_unique<kfd::KfdDevice>(env, std::move(kernel), options);
}

/// Runs `step` unless an earlier one failed.
template <typename Step> void then(base::Result<void>& r, Step&& step) {
    if (r.ok())
        r = step();
}

/// One machine of one GPU for a whole sweep (its sysfs tree written once); each run gets a fresh
/// fake kernel.
struct SweepMachine {
    SweepMachine() { m.settings.maxBufferSize = 64 << 10; }
    TestMachine& fresh() {
        m.kernel = std::make_shared<FakeKernel>(m.topology, "/fakedev");
        return m;
    }
    TestMachine m{machineSpec(1)};
    testsupport::TempDir images;
};

faultsweep::SweepRun dumpOnce(SweepMachine& machine, FaultPlan& plan) {
    faultsweep::SweepRun run;
    TestMachine& m = machine.fresh();
    m.kernel->addProcess(kPid, smallBosOfEveryKind());
    m.kernel->seize(kPid);
    auto store = formats::openDirectoryStore(machine.images.path()).value();
    Counts before(*m.kernel);
    FakeProcess* p = m.kernel->process(kPid);
    size_t bos = p->bos.size();
    hal::FileRef kfdFile = m.fileRef(kPid, 3, kKfdFileId);
    hal::FileRef render = m.fileRef(kPid, 4, kKfdFileId + 1);
    {
        auto dev = deviceOn(m, store.get(), std::make_shared<FaultingKernel>(m.kernel, plan));
        base::Result<void> r = base::success();
        then(r, [&]() -> base::Result<void> {
            HAL_TRY(dev->pauseProcess(kPid));
            return base::success();
        });
        then(r, [&] { return dev->checkpointProcess(kPid); });
        for (const hal::FileRef& f : {kfdFile, render}) {
            // criu hands a file to dumpFile only when the plugin claimed it, and fails the dump
            // on a device file nobody claims ("Can't dump file").
            then(r, [&]() -> base::Result<void> {
                HAL_TRY_ASSIGN(bool claimed, dev->claimFile(f));
                if (!claimed)
                    return base::makeError(base::ErrorCode::NotFound, "criu: %s not claimed",
                                           f.path.c_str());
                return base::success();
            });
            then(r, [&] { return dev->dumpFile(f); });
        }
        base::Result<void> finished = dev->finishDump(r.ok());
        if (r.ok())
            r = std::move(finished);
        run.result = std::move(r);
    }
    m.kernel->close(kfdFile.fd);
    m.kernel->close(render.fd);
    if (p->paused || p->evictions != 0)
        run.leftBehind.push_back("the process is paused (queues evicted " +
                                 std::to_string(p->evictions) + " times)");
    if (!m.kernel->traced(kPid))
        run.leftBehind.push_back("criu's ptrace of the process is gone");
    faultsweep::expectSame(run.leftBehind, "BOs of the process", bos, p->bos.size());
    Counts::compare(before, *m.kernel, run.leftBehind);
    return run;
}

/// The images one dump wrote, shared by every restore run.
struct DumpedImages {
    DumpedImages() {
        TestMachine src(machineSpec(1));
        src.settings.maxBufferSize = 64 << 10;
        src.kernel->addProcess(kPid, smallBosOfEveryKind());
        auto store = formats::openDirectoryStore(dir.path()).value();
        dump(src, *store, kPid, true);
    }
    testsupport::TempDir dir;
};

faultsweep::SweepRun restoreOnce(SweepMachine& machine, const DumpedImages& images,
                                 FaultPlan& plan) {
    faultsweep::SweepRun run;
    TestMachine& m = machine.fresh();
    auto store = formats::openDirectoryStore(images.dir.path()).value();
    Counts before(*m.kernel);
    m.kernel->setCurrentPid(kRestoredPid);
    std::vector<int> restoredFds;
    {
        auto dev = deviceOn(m, store.get(), std::make_shared<FaultingKernel>(m.kernel, plan));
        base::Result<void> r = base::success();
        then(r, [&]() -> base::Result<void> {
            HAL_TRY_ASSIGN(bool owns, dev->ownsImage(kKfdFileId));
            if (!owns)
                return base::makeError(base::ErrorCode::NotFound, "file id %u not ours",
                                       kKfdFileId);
            return base::success();
        });
        for (uint32_t id : {kKfdFileId, kKfdFileId + 1})
            then(r, [&]() -> base::Result<void> {
                HAL_TRY_ASSIGN(int fd, dev->restoreFile(id));
                restoredFds.push_back(fd);
                return base::success();
            });
        then(r, [&]() -> base::Result<void> {
            HAL_TRY(dev->resumeProcess(kRestoredPid));
            return base::success();
        });
        base::Result<void> finished = dev->finishRestore(r.ok());
        if (r.ok())
            r = std::move(finished);
        run.result = std::move(r);
    }
    // criu hands each fd to the task and closes its own; a failed restore kills the task.
    for (int fd : restoredFds)
        m.kernel->close(fd);
    if (!run.result.ok()) {
        // What a kfd_process needs to live on is an fd of it: with criu's closed and the task
        // killed, none may be left (the fake's fds count criu's; its BOs live while one does).
        FakeProcess* p = m.kernel->process(kRestoredPid);
        if (p && !p->bos.empty() && m.kernel->openFdCount() != before.kernelFds)
            run.leftBehind.push_back(std::to_string(p->bos.size()) +
                                     " BOs of the restored process held by an fd of criu's");
    }
    m.kernel->exitTask(kRestoredPid);
    Counts::compare(before, *m.kernel, run.leftBehind);
    return run;
}

} // namespace

TEST(KfdFaultSweep, GivenEachCallOfADumpFailingOnce_ThenTheErrorNamesItAndNothingIsLeftPaused) {
    faultsweep::SweepSpec spec;
    spec.title = "kfd dump";
    SweepMachine machine;
    spec.run = [&](FaultPlan& plan) { return dumpOnce(machine, plan); };
    spec.errnosFor = kfdErrnos;
    spec.wordsOf = kfdCallWords;
    spec.gpuOrFile = {"GPU 0x", "/fakedev/kfd", "/dev/kfd", "renderD", "file id", "/proc/"};
    spec.steps = {"paus", "checkpoint", "claiming", "collect", "writing images", "unpaus"};
    spec.stride = 7;
    faultsweep::SweepFigure f = faultsweep::runSweep(spec);
    EXPECT_GT(f.runs, 0u);
}

TEST(KfdFaultSweep, GivenAnyStatOfDevKfdFailingInADump_ThenNoFileIsTakenForARenderNode) {
    // The full sweep found a failed stat of /dev/kfd while the KFD file's images were written
    // reported as "render node /dev/kfd (minor 0) is no GPU".
    SweepMachine machine;
    FaultPlan recording;
    ASSERT_TRUE(dumpOnce(machine, recording).result.ok());
    std::vector<std::string> calls = recording.calls();
    int failed = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
        if (calls[i] != "stat")
            continue;
        FaultPlan plan;
        plan.failAt(i, EIO);
        faultsweep::SweepRun run = dumpOnce(machine, plan);
        EXPECT_TRUE(run.leftBehind.empty()) << "stat " << i;
        if (run.result.ok())
            continue; // a stat whose answer only narrows a search
        ++failed;
        EXPECT_THAT(run.result.error().describe(), ::testing::HasSubstr("cannot stat /fakedev/kfd"))
            << "stat " << i;
    }
    EXPECT_GE(failed, 2);
}

TEST(KfdFaultSweep, GivenEachCallOfARestoreFailingOnce_ThenTheErrorNamesItAndNothingIsLeft) {
    DumpedImages images;
    faultsweep::SweepSpec spec;
    spec.title = "kfd restore";
    SweepMachine machine;
    spec.run = [&](FaultPlan& plan) { return restoreOnce(machine, images, plan); };
    spec.errnosFor = kfdErrnos;
    spec.wordsOf = kfdCallWords;
    spec.gpuOrFile = {"GPU 0x", "/fakedev/kfd", "/dev/kfd", "renderD", "file id"};
    spec.steps = {"restor", "resum"};
    spec.stride = 7;
    faultsweep::SweepFigure f = faultsweep::runSweep(spec);
    EXPECT_GT(f.runs, 0u);
}
