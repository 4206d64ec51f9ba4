// The fault sweep of the render-node backend (issue 55): every system and libdrm call of a dump
// and of a restore fails once with each errno the kernel answers it with; each run must fail with
// an error naming the call, the GPU or file and the step (or recover), and leave no fd, mapping,
// libdrm object or device node behind; after a failed restore, no fd of the restored files (what
// holds their BOs) is left. FAULT_SWEEP=all runs every call; CI runs a fixed sample.
#include "drm_fixture.h"
#include "fault_device_nodes.h"
#include "fault_sweep.h"
#include "faulting_libdrm.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>

namespace fakedrm {
namespace {

using faultsweep::faultable;
using faultsweep::FaultPlan;

/// drm::KernelInterface in front of the fake render node, every call through a FaultPlan.
class FaultingKernel final : public drm::KernelInterface {
public:
    FaultingKernel(std::shared_ptr<FakeKernel> inner, FaultPlan& plan)
        : inner_(std::move(inner)), plan_(plan), nodes_(inner_->deviceNodes(), plan),
          libdrm_(inner_->libdrm(), plan) {}

    int open(const std::string& path) override {
        return faultable(plan_, "open", [&] { return inner_->open(path); });
    }
    void close(int fd) override {
        faultable(plan_, "close", [&] {
            inner_->close(fd);
            return 0;
        });
    }
    int dup(int fd) override {
        return faultable(plan_, "fcntl(F_DUPFD_CLOEXEC)", [&] { return inner_->dup(fd); });
    }
    int ioctl(int fd, unsigned long request, void* arg) override {
        // The real interface retries an ioctl on EINTR and EAGAIN (real_kernel.cpp), as here.
        std::string name = faultsweep::ioctlName(request);
        if (request == DRM_IOCTL_AMDGPU_INFO)
            name += "(" + infoQueryName(static_cast<drm_amdgpu_info*>(arg)->query) + ")";
        // The releasing ioctls, named so the plan makes them even when it fails them
        // (faultsweep::releasingCall), as for close(2).
        if (request == DRM_IOCTL_GEM_CLOSE)
            name += "(close)";
        if (request == DRM_IOCTL_AMDGPU_CTX &&
            static_cast<drm_amdgpu_ctx*>(arg)->in.op == AMDGPU_CTX_OP_FREE_CTX)
            name += "(free)";
        if (request == DRM_IOCTL_AMDGPU_GEM_VA &&
            static_cast<drm_amdgpu_gem_va*>(arg)->operation == AMDGPU_VA_OP_UNMAP)
            name += "(unmap)";
        return faultsweep::retriedIoctl(plan_, name,
                                        [&] { return inner_->ioctl(fd, request, arg); });
    }
    int fstat(int fd, struct stat* st) override {
        return faultable(plan_, "fstat", [&] { return inner_->fstat(fd, st); });
    }
    topology::DeviceNodeCalls& deviceNodes() override { return nodes_; }
    void* mmap(int fd, uint64_t offset, uint64_t size, int prot, int* err) override {
        if (int injected = plan_.enter("mmap"); injected < 0) {
            *err = -injected;
            return nullptr;
        }
        return inner_->mmap(fd, offset, size, prot, err);
    }
    void munmap(void* addr, uint64_t size) override {
        faultable(plan_, "munmap", [&] {
            inner_->munmap(addr, size);
            return 0;
        });
    }
    int pidGetFd(int pid, int targetFd) override {
        return faultable(plan_, "pidfd_getfd", [&] { return inner_->pidGetFd(pid, targetFd); });
    }
    int sameFile(int pid1, int fd1, int pid2, int fd2) override {
        return faultable(plan_, "kcmp", [&] { return inner_->sameFile(pid1, fd1, pid2, fd2); });
    }
    int selfPid() override { return inner_->selfPid(); }
    uint64_t monotonicNs() override { return inner_->monotonicNs(); }
    const topology::sysfs::Dir& files() override { return inner_->files(); }
    sdma::Libdrm& libdrm() override { return libdrm_; }

private:
    static std::string infoQueryName(uint32_t query) {
        switch (query) {
        case AMDGPU_INFO_DEV_INFO:
            return "DEV_INFO";
        case AMDGPU_INFO_VRAM_GTT:
            return "VRAM_GTT";
        case AMDGPU_INFO_FW_VERSION:
            return "FW_VERSION";
        case AMDGPU_INFO_HW_IP_COUNT:
            return "HW_IP_COUNT";
        default:
            return std::to_string(query);
        }
    }

    std::shared_ptr<FakeKernel> inner_;
    FaultPlan& plan_;
    faultsweep::FaultingDeviceNodes nodes_;
    faultsweep::FaultingLibdrm libdrm_;
};

/// The errnos the kernel (or libdrm) answers `call` with, beyond EIO, ENOMEM, EINTR, EAGAIN and
/// EFAULT (which every call can answer). Where a function is named, it is the kernel's.
std::vector<int> drmErrnos(const std::string& call) {
    std::vector<int> e = faultsweep::commonErrnos();
    auto add = [&](std::initializer_list<int> more) { e.insert(e.end(), more); };
    if (faultsweep::releasingCall(call))
        return e;
    if (call == "open")
        add({ENOENT, EPERM, EACCES, ENODEV, EMFILE}); // the devices cgroup, drm_open after unplug
    else if (call == "ioctl DRM_IOCTL_AMDGPU_CS")
        add({ECANCELED, ENODEV, EINVAL, ENOENT}); // amdgpu_cs_ioctl
    else if (call == "ioctl DRM_IOCTL_AMDGPU_WAIT_CS")
        add({ECANCELED, ENODEV, EINVAL}); // amdgpu_cs_wait_ioctl: a fence's error after a reset
    else if (call.starts_with("ioctl ")) {
        // drm_ioctl: ENODEV after unplug (drm_dev_enter), EINVAL, ENOENT for a GEM handle gone,
        // EACCES; amdgpu_gem_va_ioctl and GEM_OP's mapping list: ENOSPC (no room, array short).
        // Not EINVAL for FW_VERSION and HW_IP_COUNT: amdgpu_info_ioctl's answer for a type this
        // kernel does not know, which the backend reads as "none" by design.
        if (call.find("FW_VERSION") != std::string::npos ||
            call.find("HW_IP_COUNT") != std::string::npos)
            add({ENODEV, ENOENT, EACCES});
        else
            add({ENODEV, EINVAL, ENOENT, EACCES});
        if (call.find("GEM_VA") != std::string::npos || call.find("GEM_OP") != std::string::npos)
            add({ENOSPC});
        if (call.find("PRIME_HANDLE_TO_FD") != std::string::npos)
            add({EMFILE});
    } else if (call == "pidfd_getfd")
        add({EBADF, ESRCH, EPERM, EMFILE});
    else if (call == "kcmp")
        add({EBADF, ESRCH, EPERM});
    else if (call == "mmap")
        add({EACCES, EINVAL, ENODEV}); // drm_gem_mmap: EACCES without CPU access
    else if (call == "fstat")
        add({EACCES, EBADF});
    else if (call == "lstat")
        // Not ENOENT: an absent node is one the restore makes, and the fake's node is there, so
        // mknod answers EEXIST (a clear error of its own, but not one of lstat).
        add({EACCES, EBADF});
    else if (call == "fcntl(F_DUPFD_CLOEXEC)")
        add({EMFILE});
    else if (call == "mknod" || call == "mkdir")
        add({EEXIST, EPERM, EROFS, ENOSPC});
    else if (call == "amdgpu_device_initialize")
        add({ENODEV, EACCES});
    else if (call == "amdgpu_va_range_alloc" || call == "amdgpu_bo_va_op")
        add({EINVAL, ENOSPC});
    else if (call == "amdgpu_cs_submit")
        add({ECANCELED, ENODEV, EINVAL}); // amdgpu_cs_ioctl: ECANCELED for a context a reset hit
    else if (call == "amdgpu_cs_query_fence_status")
        add({ETIME, ECANCELED, ENODEV});
    else if (call.starts_with("amdgpu_"))
        add({EINVAL, ENODEV});
    return e;
}

constexpr int kPid = 100;
constexpr uint32_t kFileId = 7;
constexpr unsigned kMinor = 128;

/// One machine for a whole sweep (its files written once); each run gets a fresh fake kernel with
/// the GPU, and the application's render node opened again in it (its procfs entries rewritten).
struct SweepMachine {
    SweepMachine() { m.addGpu(gpuAt(kMinor), "0000:03:00.0"); }
    FakeMachine& fresh() {
        m.kernel = std::make_shared<FakeKernel>();
        m.kernel->addGpu(gpuAt(kMinor));
        return m;
    }
    AppFile openApp() {
        std::string link = m.paths.procRoot + "/" + std::to_string(kPid) + "/fd/5";
        if (!std::filesystem::is_symlink(link))
            return m.open(kPid, 5, kMinor);
        AppFile f{kPid, 5, m.kernel->open(m.paths.renderNodePath(kMinor)), kMinor};
        m.kernel->setProcessFd(kPid, 5, f.fd);
        testsupport::writeFile(m.paths.procRoot + "/" + std::to_string(kPid) + "/fdinfo/5",
                               "pos:\t0\nflags:\t02100002\ndrm-driver:\tamdgpu\ndrm-client-id:\t" +
                                   std::to_string(m.kernel->fileOf(f.fd)->clientId) + "\n");
        return f;
    }
    FakeMachine m;
};

/// One render node holding BOs of every kind the backend moves: GTT, visible VRAM, invisible
/// VRAM (SDMA), VRAM as Mesa makes it (VM_ALWAYS_VALID | NO_CPU_ACCESS: SDMA on its own file),
/// GDS (no contents), mapped, one twice; a context.
AppFile makeApp(SweepMachine& machine) {
    FakeMachine& m = machine.m;
    AppFile app = machine.openApp();
    uint64_t va = 0x7f0000000000ull;
    uint32_t gtt = m.createBo(app, 64 << 10, AMDGPU_GEM_DOMAIN_GTT, 0, 1);
    uint32_t vis =
        m.createBo(app, 96 << 10, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_CPU_ACCESS_REQUIRED, 2);
    uint32_t inv =
        m.createBo(app, 96 << 10, AMDGPU_GEM_DOMAIN_VRAM, AMDGPU_GEM_CREATE_NO_CPU_ACCESS, 3);
    m.createBo(app, 4096, AMDGPU_GEM_DOMAIN_GDS, 0, 4);
    uint32_t mesa =
        m.createBo(app, 64 << 10, AMDGPU_GEM_DOMAIN_VRAM,
                   AMDGPU_GEM_CREATE_VM_ALWAYS_VALID | AMDGPU_GEM_CREATE_NO_CPU_ACCESS, 5);
    drm_amdgpu_ctx ctx{};
    ctx.in.op = AMDGPU_CTX_OP_ALLOC_CTX;
    EXPECT_EQ(0, m.kernel->ioctl(app.fd, DRM_IOCTL_AMDGPU_CTX, &ctx));
    EXPECT_EQ(0, m.mapBo(app, gtt, va, 0, 64 << 10));
    EXPECT_EQ(0, m.mapBo(app, vis, va + (1 << 20), 0, 96 << 10));
    EXPECT_EQ(0, m.mapBo(app, vis, va + (2 << 20), 4096, 8192, AMDGPU_VM_PAGE_READABLE));
    EXPECT_EQ(0, m.mapBo(app, inv, va + (4 << 20), 0, 96 << 10));
    EXPECT_EQ(0, m.mapBo(app, mesa, va + (6 << 20), 0, 64 << 10));
    for (uint32_t h : {gtt, vis})
        m.mmapOffset(app, h);
    return app;
}

/// What a run may leave in the fake kernel. What it may leave in this process (fds, mappings) is
/// counted around the whole run: the fake's dma-buf memfds live as long as the BOs it exports.
struct Counts {
    explicit Counts(FakeKernel& k) : kernelFds(k.openFds()), nodes(k.madeNodes().size()) {}
    /// Appends to `left` what differs from `before` now.
    static void compare(const Counts& before, FakeKernel& k, std::vector<std::string>& left) {
        Counts now(k);
        faultsweep::expectSame(left, "fds of the fake kernel", before.kernelFds, now.kernelFds);
        faultsweep::expectSame(left, "device nodes made", before.nodes, now.nodes);
        faultsweep::expectSame(left, "libdrm objects", 0, k.liveLibdrmObjects());
    }
    size_t kernelFds, nodes;
};

faultsweep::SweepRun dumpOnce(SweepMachine& machine, Images& images, FaultPlan& plan) {
    faultsweep::SweepRun run;
    size_t fds = faultsweep::openFdsOfThisProcess(), maps = faultsweep::mappingsOfThisProcess();
    FakeMachine& m = machine.fresh();
    AppFile app = makeApp(machine);
    std::shared_ptr<File> file = m.kernel->fileOf(app.fd);
    size_t handles = file->handles.size(), contexts = file->contexts.size(),
           mappings = file->vm.size();
    Counts before(*m.kernel);
    hal::FileRef ref = m.criuFile(app, kFileId);
    {
        drm::DrmDevice dev(m.env(images.store.get()),
                           std::make_shared<FaultingKernel>(m.kernel, plan), m.paths);
        base::Result<void> r = base::success();
        auto paused = dev.pauseProcess(kPid);
        if (!paused.ok())
            r = std::move(paused).error();
        if (r.ok())
            r = dev.checkpointProcess(kPid);
        if (r.ok()) {
            // criu dumps only a file the plugin claims, and fails on a device nobody claims.
            auto mine = dev.claimFile(ref);
            if (!mine.ok())
                r = std::move(mine).error();
            else if (!mine.value())
                r = base::makeError(base::ErrorCode::NotFound, "criu: %s not claimed",
                                    ref.path.c_str());
        }
        if (r.ok())
            r = dev.dumpFile(ref);
        base::Result<void> finished = dev.finishDump(r.ok());
        if (r.ok())
            r = std::move(finished);
        run.result = std::move(r);
    }
    m.kernel->close(ref.fd);
    // The SDMA copy on the process's own file frees what it made there.
    faultsweep::expectSame(run.leftBehind, "BOs of the process", handles, file->handles.size());
    faultsweep::expectSame(run.leftBehind, "contexts of the process", contexts,
                           file->contexts.size());
    faultsweep::expectSame(run.leftBehind, "GPU VA mappings of the process", mappings,
                           file->vm.size());
    file.reset(); // its BOs' dma-buf memfds are counted below
    Counts::compare(before, *m.kernel, run.leftBehind);
    m.kernel.reset();
    faultsweep::expectSame(run.leftBehind, "fds of this process", fds,
                           faultsweep::openFdsOfThisProcess());
    faultsweep::expectSame(run.leftBehind, "mappings of this process", maps,
                           faultsweep::mappingsOfThisProcess());
    return run;
}

faultsweep::SweepRun restoreOnce(SweepMachine& machine, Images& images, FaultPlan& plan) {
    faultsweep::SweepRun run;
    size_t fds = faultsweep::openFdsOfThisProcess(), maps = faultsweep::mappingsOfThisProcess();
    FakeMachine& m = machine.fresh();
    Counts before(*m.kernel);
    int restored = -1;
    {
        drm::DrmDevice dev(m.env(images.store.get()),
                           std::make_shared<FaultingKernel>(m.kernel, plan), m.paths);
        base::Result<void> r = base::success();
        auto owns = dev.ownsImage(kFileId);
        if (!owns.ok())
            r = std::move(owns).error();
        if (r.ok()) {
            auto fd = dev.restoreFile(kFileId);
            if (fd.ok())
                restored = fd.value();
            else
                r = std::move(fd).error();
        }
        if (r.ok()) {
            auto resumed = dev.resumeProcess(kPid);
            if (!resumed.ok())
                r = std::move(resumed).error();
        }
        base::Result<void> finished = dev.finishRestore(r.ok());
        if (r.ok())
            r = std::move(finished);
        run.result = std::move(r);
    }
    // criu hands the fd to the task and closes its own; a failed restore kills the task. The BOs
    // of the restored file live while an fd of it does: with these closed, none may be left.
    if (restored >= 0)
        m.kernel->close(restored);
    Counts::compare(before, *m.kernel, run.leftBehind);
    m.kernel.reset();
    faultsweep::expectSame(run.leftBehind, "fds of this process", fds,
                           faultsweep::openFdsOfThisProcess());
    faultsweep::expectSame(run.leftBehind, "mappings of this process", maps,
                           faultsweep::mappingsOfThisProcess());
    return run;
}

std::vector<std::string> drmCallWords(const std::string& call) {
    std::vector<std::string> words = faultsweep::callWords(call);
    if (call == "fcntl(F_DUPFD_CLOEXEC)")
        words.push_back("dup");
    if (call == "lstat")
        words.push_back("cannot stat");
    return words;
}

faultsweep::SweepSpec drmSpec(const std::string& title) {
    faultsweep::SweepSpec spec;
    spec.title = title;
    spec.errnosFor = drmErrnos;
    spec.wordsOf = drmCallWords;
    spec.gpuOrFile = {"GPU 0x", "renderD", "file id", "/proc/"};
    spec.stride = 10;
    return spec;
}

} // namespace

TEST(DrmFaultSweep, GivenEachCallOfADumpFailingOnce_ThenTheErrorNamesItAndNothingIsLeft) {
    faultsweep::SweepSpec spec = drmSpec("amdgpu-drm dump");
    SweepMachine machine;
    Images images;
    spec.run = [&](FaultPlan& plan) { return dumpOnce(machine, images, plan); };
    spec.steps = {"paus", "checkpoint", "collect", "writing images", "unpaus"};
    EXPECT_GT(faultsweep::runSweep(spec).runs, 0u);
}

TEST(DrmFaultSweep, GivenEachCallOfARestoreFailingOnce_ThenTheErrorNamesItAndNothingIsLeft) {
    Images images;
    {
        SweepMachine src;
        AppFile app = makeApp(src);
        auto dumped = dumpRefs(src.m, *images.store, kPid, {src.m.criuFile(app, kFileId)});
        ASSERT_TRUE(dumped.ok()) << dumped.error().describe();
    }
    faultsweep::SweepSpec spec = drmSpec("amdgpu-drm restore");
    SweepMachine machine;
    spec.run = [&](FaultPlan& plan) { return restoreOnce(machine, images, plan); };
    spec.steps = {"restor", "resum"};
    EXPECT_GT(faultsweep::runSweep(spec).runs, 0u);
}

} // namespace fakedrm
