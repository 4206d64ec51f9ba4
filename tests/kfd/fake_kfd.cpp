#include "fake_kfd.h"

#include <fcntl.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace fakekfd {

namespace {
constexpr unsigned kKfdMajor = 238;
constexpr uint64_t kPage = 4096;
constexpr uint32_t kPrivMagic = 0x4446464b;      // "KFFD"
constexpr uint64_t kDoorbellType = 0x3ull << 62; // KFD_MMAP_TYPE_DOORBELL
constexpr uint64_t kMmioType = 0x0ull << 62;     // KFD_MMAP_TYPE_MMIO

/// The /dev/kfd mmap offset of a doorbell or MMIO-remap BO on GPU `gpuId` (criu_restore_bo and
/// kfd_ioctl_alloc_memory_of_gpu: type and gpu_id in the high bits).
uint64_t kfdMmapOffset(uint32_t flags, uint32_t gpuId) {
    uint64_t type = (flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL) ? kDoorbellType : kMmioType;
    return type | (static_cast<uint64_t>(gpuId & 0xffff) << 46);
}

/// The command of number `nr` as the fake serves it (kfd_ioctl's amdkfd_ioctls table), or 0.
unsigned long kfdCommandOf(unsigned nr) {
    static const unsigned long served[] = {AMDKFD_IOC_GET_VERSION,
                                           AMDKFD_IOC_CRIU_OP,
                                           AMDKFD_IOC_ACQUIRE_VM,
                                           AMDKFD_IOC_GET_PROCESS_APERTURES_NEW,
                                           AMDKFD_IOC_SET_MEMORY_POLICY,
                                           AMDKFD_IOC_SET_XNACK_MODE,
                                           AMDKFD_IOC_GET_CLOCK_COUNTERS,
                                           AMDKFD_IOC_SET_SCRATCH_BACKING_VA,
                                           AMDKFD_IOC_SET_TRAP_HANDLER,
                                           AMDKFD_IOC_ALLOC_MEMORY_OF_GPU,
                                           AMDKFD_IOC_FREE_MEMORY_OF_GPU,
                                           AMDKFD_IOC_MAP_MEMORY_TO_GPU,
                                           AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU,
                                           AMDKFD_IOC_CREATE_QUEUE,
                                           AMDKFD_IOC_DESTROY_QUEUE,
                                           AMDKFD_IOC_UPDATE_QUEUE,
                                           AMDKFD_IOC_CREATE_EVENT,
                                           AMDKFD_IOC_DESTROY_EVENT,
                                           AMDKFD_IOC_SET_EVENT,
                                           AMDKFD_IOC_RESET_EVENT,
                                           AMDKFD_IOC_WAIT_EVENTS};
    for (unsigned long c : served)
        if (_IOC_NR(c) == nr)
            return c;
    return 0;
}

uint64_t pageAlign(uint64_t n) {
    return (n + kPage - 1) / kPage * kPage;
}

template <typename T> T* userPtr(uint64_t p) {
    return reinterpret_cast<T*>(static_cast<uintptr_t>(p));
}

void put32(std::vector<uint8_t>& v, uint32_t x) {
    for (int i = 0; i < 4; ++i)
        v.push_back(static_cast<uint8_t>(x >> (8 * i)));
}
void put64(std::vector<uint8_t>& v, uint64_t x) {
    put32(v, static_cast<uint32_t>(x));
    put32(v, static_cast<uint32_t>(x >> 32));
}
bool get32(const uint8_t*& p, const uint8_t* end, uint32_t* x) {
    if (end - p < 4)
        return false;
    *x = 0;
    for (int i = 0; i < 4; ++i)
        *x |= static_cast<uint32_t>(p[i]) << (8 * i);
    p += 4;
    return true;
}
bool get64(const uint8_t*& p, const uint8_t* end, uint64_t* x) {
    uint32_t lo, hi;
    if (!get32(p, end, &lo) || !get32(p, end, &hi))
        return false;
    *x = lo | (static_cast<uint64_t>(hi) << 32);
    return true;
}
} // namespace

uint8_t patternByte(uint64_t seed, uint64_t offset) {
    uint64_t x = (offset >> 3) * 0x9e3779b97f4a7c15ull + seed;
    x ^= x >> 29;
    return static_cast<uint8_t>(x >> (8 * (offset & 7)));
}

uint64_t currentRss() {
    FILE* f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    unsigned long size = 0, rss = 0;
    if (fscanf(f, "%lu %lu", &size, &rss) != 2)
        rss = 0;
    fclose(f);
    return rss * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// ------------------------------------------------------------------------------ objects

struct FakeKernel::Task {
    int pid = 0;
    std::map<int, std::shared_ptr<File>> fds;
};

// ------------------------------------------------------------------------------ setup

FakeKernel::FakeKernel(const topology::Topology& topology, std::string devRoot)
    : devRoot_(std::move(devRoot)) {
    for (const topology::Node* n : topology.gpus())
        gpus_.emplace_back(n->gpuId, n->renderMinor());
}

FakeKernel::~FakeKernel() = default;

FakeProcess& FakeKernel::addProcess(int pid, const ProcessSpec& spec) {
    std::lock_guard<std::mutex> lock(mu_);
    auto p = std::make_shared<FakeProcess>();
    p->pid = pid;
    p->nsPid = spec.nsPid ? spec.nsPid : static_cast<uint32_t>(pid);
    for (size_t i = 0; i < gpus_.size(); ++i) {
        if (spec.hiddenGpus.count(static_cast<int>(i)))
            continue;
        auto u = spec.userIds.find(static_cast<int>(i));
        p->userOfActual[gpus_[i].first] = u == spec.userIds.end() ? gpus_[i].first : u->second;
    }
    std::mt19937_64 rng(static_cast<uint64_t>(pid) * 7919);
    uint32_t tag = 1;
    for (const BoSpec& s : spec.bos) {
        auto bo = std::make_shared<FakeBo>();
        bo->addr = nextBoAddr_;
        nextBoAddr_ += pageAlign(s.size) + kPage;
        bo->size = s.size;
        bo->actualGpuId = gpus_.at(static_cast<size_t>(s.gpu)).first;
        bo->allocFlags = s.flags;
        bo->privTag = tag++;
        if (kfd::boMappedThroughKfd(s.flags))
            bo->mmapOffset = kfdMmapOffset(s.flags, bo->actualGpuId);
        else {
            bo->mmapOffset = nextMmapOffset_;
            nextMmapOffset_ += pageAlign(s.size);
        }
        if (kfd::boHasContents(s.flags)) {
            if (s.pattern) {
                bo->patternSeed = rng() | 1;
            } else {
                bo->data.resize(s.size);
                for (auto& b : bo->data)
                    b = static_cast<std::byte>(rng());
            }
        }
        p->bos.push_back(bo);
    }
    p->objects = spec.objects;
    p->numObjects = spec.numObjects;
    processes_[pid] = p;
    auto task = std::make_shared<Task>();
    task->pid = pid;
    auto kfdFile = std::make_shared<File>();
    kfdFile->kind = File::Kfd;
    kfdFile->proc = p;
    task->fds[3] = kfdFile;
    int next = 4;
    for (const auto& [gpuId, minor] : gpus_) {
        auto r = std::make_shared<File>();
        r->kind = File::Render;
        r->minor = minor;
        task->fds[next++] = r;
    }
    tasks_[pid] = task;
    return *p;
}

FakeProcess* FakeKernel::process(int pid) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = processes_.find(pid);
    return it == processes_.end() ? nullptr : it->second.get();
}

void FakeKernel::addPlainTask(int pid, const std::vector<std::string>& paths) {
    auto task = std::make_shared<Task>();
    task->pid = pid;
    int next = 3;
    for (const std::string& path : paths) {
        int fd = open(path, O_RDWR);
        if (fd >= 0) {
            std::lock_guard<std::mutex> lock(mu_);
            task->fds[next++] = fds_[fd];
            fds_.erase(fd);
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    tasks_[pid] = task;
}

void FakeKernel::failCall(const std::string& name, int err, int nth) {
    libdrm_.failCall(name, err, nth);
    std::lock_guard<std::mutex> lock(mu_);
    faults_[name] = {nth, err};
}

int FakeKernel::injected(const std::string& name) {
    auto it = faults_.find(name);
    if (it == faults_.end())
        return 0;
    if (--it->second.first > 0)
        return 0;
    int err = it->second.second;
    faults_.erase(it);
    return -err;
}

size_t FakeKernel::openFdCount() {
    std::lock_guard<std::mutex> lock(mu_);
    return fds_.size();
}

int FakeKernel::installFd(std::shared_ptr<File> f) {
    int fd = nextFd_++;
    fds_[fd] = std::move(f);
    return fd;
}

std::shared_ptr<FakeKernel::File> FakeKernel::fileOf(int fd) {
    auto it = fds_.find(fd);
    return it == fds_.end() ? nullptr : it->second;
}

std::shared_ptr<FakeProcess> FakeKernel::processForCurrent() {
    auto it = processes_.find(currentPid_);
    if (it != processes_.end())
        return it->second;
    // kfd_open -> kfd_create_process: a process gets a device (pdd) for every GPU its device
    // cgroup lets it use (a container given some GPUs: their render nodes are all it has).
    auto p = std::make_shared<FakeProcess>();
    p->pid = currentPid_;
    p->nsPid = nsPidOf_ ? nsPidOf_(currentPid_) : static_cast<uint32_t>(currentPid_);
    for (const auto& [gpuId, minor] : gpus_)
        if (!devDir_.denied(minor))
            p->userOfActual[gpuId] = gpuId;
    processes_[currentPid_] = p;
    return p;
}

// ------------------------------------------------------------------------------ files

int FakeKernel::open(const std::string& path, int) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("open"))
        return e;
    if (path == kfdPath()) {
        if (kfdOpenError_)
            return kfdOpenError_;
        auto f = std::make_shared<File>();
        f->kind = File::Kfd;
        f->proc = processForCurrent();
        return installFd(f);
    }
    int minor = devDir_.minorOf(path);
    if (minor >= 0) {
        if (devDir_.denied(minor))
            return -EPERM;
        bool known = foreignMinors_.count(minor) != 0;
        for (const auto& [gpuId, m] : gpus_)
            known = known || m == minor;
        if (!known)
            return -ENOENT;
        auto f = std::make_shared<File>();
        f->kind = File::Render;
        f->minor = minor;
        return installFd(f);
    }
    return -ENOENT;
}

int FakeKernel::close(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    return fds_.erase(fd) ? 0 : -EBADF;
}

int FakeKernel::dup(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("dup"))
        return e;
    auto f = fileOf(fd);
    return f ? installFd(f) : -EBADF;
}

int FakeKernel::stat(const std::string& path, struct stat* st) {
    std::lock_guard<std::mutex> lock(mu_);
    memset(st, 0, sizeof(*st));
    st->st_mode = S_IFCHR | 0666;
    if (path == kfdPath()) {
        if (kfdOpenError_ == -ENOENT)
            return -ENOENT;
        st->st_rdev = makedev(kKfdMajor, 0);
        return 0;
    }
    int minor = devDir_.minorOf(path);
    if (minor >= 0) {
        st->st_rdev = makedev(kfd::kDrmMajor, static_cast<unsigned>(minor));
        return 0;
    }
    return -ENOENT;
}

namespace {
void statOfFile(int kind, int minor, struct stat* st) {
    memset(st, 0, sizeof(*st));
    if (kind == 2) { // dmabuf: an anonymous inode
        st->st_mode = S_IFREG | 0600;
        return;
    }
    st->st_mode = S_IFCHR | 0666;
    st->st_rdev =
        kind == 0 ? makedev(kKfdMajor, 0) : makedev(kfd::kDrmMajor, static_cast<unsigned>(minor));
}
} // namespace

int FakeKernel::fstat(int fd, struct stat* st) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("fstat"))
        return e;
    auto f = fileOf(fd);
    if (!f)
        return -EBADF;
    statOfFile(f->kind, f->minor, st);
    return 0;
}

int FakeKernel::sameFile(int a, int b) {
    std::lock_guard<std::mutex> lock(mu_);
    auto fa = fileOf(a), fb = fileOf(b);
    if (!fa || !fb)
        return -EBADF;
    return fa == fb ? 1 : 0;
}

int FakeKernel::listPids(std::vector<int>* pids) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("listPids"))
        return e;
    pids->push_back(1);
    for (const auto& [pid, t] : tasks_)
        pids->push_back(pid);
    return 0;
}

int FakeKernel::listProcessFds(int pid, std::vector<kfd::ProcFd>* fds) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("listProcessFds"))
        return e;
    auto it = tasks_.find(pid);
    if (it == tasks_.end())
        return -ENOENT;
    for (const auto& [fd, f] : it->second->fds) {
        kfd::ProcFd p;
        p.fd = fd;
        statOfFile(f->kind, f->minor, &p.st);
        fds->push_back(p);
    }
    return 0;
}

int FakeKernel::pidGetFd(int pid, int targetFd) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("pidGetFd"))
        return e;
    auto it = tasks_.find(pid);
    if (it == tasks_.end())
        return -ESRCH;
    if (!traced_.count(pid))
        return -EPERM; // PTRACE_MODE_ATTACH_REALCREDS
    auto f = it->second->fds.find(targetFd);
    if (f == it->second->fds.end())
        return -EBADF;
    return installFd(f->second);
}

int FakeKernel::ptraceSeize(int pid) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int e = injected("ptraceSeize"))
        return e;
    if (!tasks_.count(pid))
        return -ESRCH;
    if (traced_.count(pid))
        return -EPERM; // ptrace_attach: a task has one tracer
    traced_.insert(pid);
    return 0;
}

int FakeKernel::ptraceDetach(int pid) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!tasks_.count(pid) || !traced_.count(pid))
        return -ESRCH;
    traced_.erase(pid);
    return 0;
}

void FakeKernel::exitTask(int pid) {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.erase(pid);
    traced_.erase(pid);
    processes_.erase(pid);
}

void FakeKernel::reapTask(int pid) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = tasks_.find(pid);
        if (it != tasks_.end())
            for (const auto& [fd, file] : it->second->fds)
                if (auto own = fds_.find(fd); own != fds_.end() && own->second == file)
                    fds_.erase(own);
    }
    exitTask(pid);
}

std::vector<int> FakeKernel::taskPids() {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<int> pids;
    for (const auto& [pid, task] : tasks_)
        pids.insert(pid);
    for (const auto& [pid, process] : processes_)
        pids.insert(pid);
    return {pids.begin(), pids.end()};
}

std::vector<int> FakeKernel::processPids() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int> pids;
    for (const auto& [pid, process] : processes_)
        pids.push_back(pid);
    return pids;
}

// ------------------------------------------------------------------------------ the current task

int FakeKernel::taskOpen(const std::string& path, int flags) {
    int fd = open(path, flags);
    if (fd < 0)
        return fd;
    std::lock_guard<std::mutex> lock(mu_);
    auto& task = tasks_[currentPid_];
    if (!task) {
        task = std::make_shared<Task>();
        task->pid = currentPid_;
    }
    task->fds[fd] = fds_[fd];
    return fd;
}

int FakeKernel::taskClose(int fd) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = tasks_.find(currentPid_);
        if (it != tasks_.end())
            it->second->fds.erase(fd);
    }
    return close(fd);
}

int FakeKernel::taskMoveFd(int from, int to) {
    std::lock_guard<std::mutex> lock(mu_);
    auto f = fileOf(from);
    if (!f)
        return -EBADF;
    if (fds_.count(to))
        return -EBUSY;
    fds_.erase(from);
    fds_[to] = f;
    auto& task = tasks_[currentPid_];
    if (!task) {
        task = std::make_shared<Task>();
        task->pid = currentPid_;
    }
    task->fds.erase(from);
    task->fds[to] = f;
    return 0;
}

// ------------------------------------------------------------------------------ ioctls

int FakeKernel::ioctl(int fd, unsigned long request, void* arg) {
    // kfd_ioctl serves a command by its number with the kernel's own struct: the caller's
    // struct, when of another size, is copied in as far as it goes (the rest zero) and out
    // as far as it goes, whatever the command answered.
    if (_IOC_TYPE(request) == AMDKFD_IOCTL_BASE && arg) {
        unsigned long own = kfdCommandOf(_IOC_NR(request));
        if (own && own != request) {
            size_t usize = _IOC_SIZE(request);
            std::vector<uint8_t> kdata(std::max<size_t>(usize, _IOC_SIZE(own)), 0);
            if (_IOC_DIR(own) & _IOC_WRITE)
                memcpy(kdata.data(), arg, usize);
            int r = ioctl(fd, own, kdata.data());
            if (_IOC_DIR(own) & _IOC_READ)
                memcpy(arg, kdata.data(), usize);
            return r;
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto f = fileOf(fd);
    if (!f)
        return -EBADF;
    if (!arg)
        return -EFAULT;
    if (request == AMDKFD_IOC_GET_VERSION && f->kind == File::Kfd) {
        if (int e = injected("ioctl:GET_VERSION"))
            return e;
        auto* v = static_cast<kfd_ioctl_get_version_args*>(arg);
        v->major_version = version_.first;
        v->minor_version = version_.second;
        return 0;
    }
    if (request == AMDKFD_IOC_CRIU_OP && f->kind == File::Kfd)
        return criuOp(*f, static_cast<kfd_ioctl_criu_args*>(arg));
    if (f->kind == File::Kfd && _IOC_TYPE(request) == AMDKFD_IOCTL_BASE)
        return runtimeIoctl(*f, request, arg);
    if (request == gem::kIoctlGemListHandles && f->kind == File::Render)
        return listRenderHandles(*f, static_cast<gem::GemListHandles*>(arg));
    if (request == DRM_IOCTL_VERSION && f->kind == File::Render) {
        if (int e = injected("ioctl:DRM_VERSION"))
            return e;
        auto* v = static_cast<drm_version*>(arg);
        const char* name = foreignMinors_.count(f->minor) ? "i915" : "amdgpu";
        size_t len = strlen(name);
        if (v->name && v->name_len > 0)
            memcpy(v->name, name, std::min(len, v->name_len));
        v->name_len = len;
        return 0;
    }
    return -ENOTTY;
}

uint32_t FakeKernel::addRenderBo(int pid, int taskFd, uint64_t size, uint64_t domains,
                                 uint64_t flags) {
    std::lock_guard<std::mutex> lock(mu_);
    File& f = *tasks_.at(pid)->fds.at(taskFd);
    uint32_t handle = 1;
    while (f.gemBos.count(handle))
        ++handle;
    gem::GemListHandlesEntry e;
    e.gemHandle = handle;
    e.size = size;
    e.preferredDomains = domains;
    e.allocFlags = flags;
    e.alignment = 4096;
    f.gemBos[handle] = e;
    return handle;
}

// amdgpu_gem_list_handles_ioctl: the count when the array is too small, else every handle.
int FakeKernel::listRenderHandles(File& f, gem::GemListHandles* args) {
    if (!listHandles_)
        return -EINVAL;
    if (args->numEntries < f.gemBos.size()) {
        args->numEntries = static_cast<uint32_t>(f.gemBos.size());
        return 0;
    }
    auto* out = reinterpret_cast<gem::GemListHandlesEntry*>(static_cast<uintptr_t>(args->entries));
    uint32_t i = 0;
    for (const auto& [handle, e] : f.gemBos)
        out[i++] = e;
    args->numEntries = i;
    return 0;
}

std::vector<uint8_t> FakeKernel::privDataOf(const FakeProcess& p) const {
    std::vector<uint8_t> v;
    put32(v, kPrivMagic);
    put32(v, static_cast<uint32_t>(p.userOfActual.size()));
    put32(v, static_cast<uint32_t>(p.bos.size()));
    put32(v, p.numObjects + runtimeObjects(p));
    for (const auto& [actual, user] : p.userOfActual)
        put32(v, user);
    for (const auto& bo : p.bos) {
        put32(v, bo->privTag);
        put64(v, bo->patternSeed);
    }
    put32(v, static_cast<uint32_t>(p.objects.size()));
    v.insert(v.end(), p.objects.begin(), p.objects.end());
    appendRuntimeState(p, v);
    return v;
}

// After the opaque objects, what a running process made (kfd_criu_checkpoint_queues,
// kfd_criu_checkpoint_events and each BO's mapped_gpuids in kfd_criu_bo_priv_data): per BO the
// user gpu_ids it is mapped to, the queues, the events and the event page's handle.
void FakeKernel::appendRuntimeState(const FakeProcess& p, std::vector<uint8_t>& v) {
    put32(v, static_cast<uint32_t>(p.bos.size()));
    for (const auto& bo : p.bos) {
        put32(v, static_cast<uint32_t>(bo->mappedOn.size()));
        for (uint32_t actual : bo->mappedOn)
            put32(v, p.userOfActual.at(actual));
    }
    put32(v, static_cast<uint32_t>(p.queues.size()));
    for (const FakeQueue& q : p.queues) {
        for (uint32_t x : {q.id, p.userOfActual.at(q.actualGpuId), q.type, q.percentage, q.priority,
                           q.doorbellIndex})
            put32(v, x);
        for (uint64_t x : {q.ringBase, q.ringSize, q.writePtr, q.readPtr, q.eopBase, q.eopSize,
                           q.ctxSave, q.ctxSaveSize, q.ctlStackSize})
            put64(v, x);
    }
    put32(v, static_cast<uint32_t>(p.events.size()));
    for (const FakeEvent& e : p.events)
        for (uint32_t x :
             {e.id, e.type, static_cast<uint32_t>(e.autoReset), static_cast<uint32_t>(e.signaled)})
            put32(v, x);
    put64(v, p.eventPageHandle);
}

bool FakeKernel::parseRuntimeState(const uint8_t*& cur, const uint8_t* end, FakeProcess& p,
                                   const std::map<uint32_t, uint32_t>& actualOfUser) {
    auto actual = [&](uint32_t user, uint32_t* out) {
        auto it = actualOfUser.find(user);
        if (it == actualOfUser.end())
            return false;
        *out = it->second;
        return true;
    };
    uint32_t nBos, nQueues, nEvents;
    if (!get32(cur, end, &nBos) || nBos > static_cast<uint64_t>(end - cur) / 4)
        return false;
    for (uint32_t b = 0; b < nBos; ++b) {
        auto bo = std::make_shared<FakeBo>();
        uint32_t n, user, a;
        if (!get32(cur, end, &n) || n > actualOfUser.size())
            return false;
        for (uint32_t i = 0; i < n; ++i) {
            if (!get32(cur, end, &user) || !actual(user, &a))
                return false;
            bo->mappedOn.insert(a);
        }
        p.bos.push_back(bo);
    }
    if (!get32(cur, end, &nQueues) || nQueues > static_cast<uint64_t>(end - cur) / 96)
        return false;
    for (uint32_t i = 0; i < nQueues; ++i) {
        FakeQueue q;
        uint32_t user;
        if (!get32(cur, end, &q.id) || !get32(cur, end, &user) || !actual(user, &q.actualGpuId) ||
            !get32(cur, end, &q.type) || !get32(cur, end, &q.percentage) ||
            !get32(cur, end, &q.priority) || !get32(cur, end, &q.doorbellIndex))
            return false;
        for (uint64_t* x : {&q.ringBase, &q.ringSize, &q.writePtr, &q.readPtr, &q.eopBase,
                            &q.eopSize, &q.ctxSave, &q.ctxSaveSize, &q.ctlStackSize})
            if (!get64(cur, end, x))
                return false;
        p.queues.push_back(q);
    }
    if (!get32(cur, end, &nEvents) || nEvents > static_cast<uint64_t>(end - cur) / 16)
        return false;
    for (uint32_t i = 0; i < nEvents; ++i) {
        FakeEvent e;
        uint32_t autoReset, signaled;
        if (!get32(cur, end, &e.id) || !get32(cur, end, &e.type) || !get32(cur, end, &autoReset) ||
            !get32(cur, end, &signaled) || autoReset > 1 || signaled > 1)
            return false;
        e.autoReset = autoReset;
        e.signaled = signaled;
        p.events.push_back(e);
    }
    return get64(cur, end, &p.eventPageHandle);
}

int FakeKernel::criuOp(File& f, kfd_ioctl_criu_args* args) {
    static const char* names[] = {"PROCESS_INFO", "CHECKPOINT", "UNPAUSE", "RESTORE", "RESUME"};
    if (args->op > KFD_CRIU_OP_RESUME)
        return -EINVAL;
    FakeProcess& p = *f.proc;
    int r = injected(std::string("ioctl:") + names[args->op]);
    // kfd_ioctl: only the process that opened the file, or its ptrace parent, may use it.
    if (!r && !mayUse(p))
        r = -EBADF;
    if (!r) {
        switch (args->op) {
        case KFD_CRIU_OP_PROCESS_INFO:
            r = opProcessInfo(p, args);
            break;
        case KFD_CRIU_OP_CHECKPOINT:
            r = opCheckpoint(p, args);
            break;
        case KFD_CRIU_OP_UNPAUSE:
            if (!p.paused) {
                r = -EINVAL;
            } else {
                p.paused = false;
                --p.evictions;
            }
            break;
        case KFD_CRIU_OP_RESTORE:
            r = opRestore(p, args);
            break;
        case KFD_CRIU_OP_RESUME:
            r = opResume(args);
            break;
        }
    }
    if (observer_)
        observer_->criuOp(p.pid, args->op, r);
    return r;
}

bool FakeKernel::mayUse(const FakeProcess& p) {
    return p.pid == currentPid_ || traced_.count(p.pid) ||
           (tracerCheck_ && tracerCheck_(p.pid, currentPid_));
}

int FakeKernel::opProcessInfo(FakeProcess& p, kfd_ioctl_criu_args* args) {
    if (p.userOfActual.empty())
        return -ENODEV;
    ++p.evictions;
    p.paused = true;
    args->pid = p.nsPid;
    args->num_devices = static_cast<uint32_t>(p.userOfActual.size());
    args->num_bos = static_cast<uint32_t>(p.bos.size());
    args->num_objects = p.numObjects + runtimeObjects(p);
    args->priv_data_size = privDataOf(p).size();
    return 0;
}

int FakeKernel::opCheckpoint(FakeProcess& p, kfd_ioctl_criu_args* args) {
    if (!p.paused)
        return -EINVAL; // "CRIU plugin did not call op PROCESS_INFO before checkpointing"
    if (!args->devices || !args->bos || !args->priv_data)
        return -EINVAL;
    std::vector<uint8_t> priv = privDataOf(p);
    if (args->num_devices != p.userOfActual.size() || args->num_bos != p.bos.size() ||
        args->num_objects != p.numObjects + runtimeObjects(p) ||
        args->priv_data_size != priv.size())
        return -EINVAL;
    auto* devs = userPtr<kfd_criu_device_bucket>(args->devices);
    size_t i = 0;
    for (const auto& [actual, user] : p.userOfActual) {
        devs[i] = {};
        devs[i].user_gpu_id = user;
        devs[i].actual_gpu_id = actual;
        ++i;
    }
    auto* bos = userPtr<kfd_criu_bo_bucket>(args->bos);
    for (size_t b = 0; b < p.bos.size(); ++b) {
        const FakeBo& bo = *p.bos[b];
        bos[b] = {};
        bos[b].addr = bo.addr;
        bos[b].size = bo.size;
        bos[b].offset = bo.mmapOffset;
        bos[b].gpu_id = p.userOfActual.at(bo.actualGpuId);
        bos[b].alloc_flags = bo.allocFlags;
        bos[b].dmabuf_fd = kfd::kInvalidFd;
        if (kfd::boHasContents(bo.allocFlags)) {
            auto d = std::make_shared<File>();
            d->kind = File::Dmabuf;
            d->bo = p.bos[b];
            bos[b].dmabuf_fd = static_cast<uint32_t>(installFd(d));
        }
    }
    memcpy(userPtr<uint8_t>(args->priv_data), priv.data(), priv.size());
    return 0;
}

int FakeKernel::opRestore(FakeProcess& p, kfd_ioctl_criu_args* args) {
    // criu_restore (kfd_chardev.c) checks, in this order: the arguments; the process's private
    // data (criu_restore_process: its version); the devices (criu_restore_devices); the BOs
    // (criu_restore_bos, criu_restore_memory_of_gpu); the objects; and that the private data
    // was consumed exactly. A process without BOs is restored too (num_bos 0, bos NULL).
    if ((args->num_bos > 0 && !args->bos) || !args->devices || !args->priv_data ||
        !args->priv_data_size || !args->num_devices)
        return -EINVAL;
    const auto* priv = userPtr<const uint8_t>(args->priv_data);
    const uint8_t* cur = priv;
    const uint8_t* end = priv + args->priv_data_size;
    uint32_t magic, nDev, nBos, nObj;
    if (!get32(cur, end, &magic) || magic != kPrivMagic)
        return -EINVAL; // "Invalid CRIU API version"
    // criu_restore_devices: one bucket for each device of the process (n_pdds), each naming a
    // device of this machine that the process has, and a render node of that device whose VM
    // the process takes: a device whose VM it already has (pdd->drm_file: it acquired the VM,
    // has BOs, or was restored) refuses.
    if (args->num_devices != p.userOfActual.size())
        return -EINVAL;
    auto* devs = userPtr<kfd_criu_device_bucket>(args->devices);
    std::map<uint32_t, uint32_t> actualOfUser;
    std::map<uint32_t, int> drmFiles;
    std::map<uint32_t, const void*> vms;
    for (uint32_t i = 0; i < args->num_devices; ++i) {
        const kfd_criu_device_bucket& d = devs[i];
        int minor = -1;
        for (const auto& [g, m] : gpus_)
            if (g == d.actual_gpu_id)
                minor = m;
        if (!d.user_gpu_id || minor < 0 || !p.userOfActual.count(d.actual_gpu_id) ||
            actualOfUser.count(d.user_gpu_id))
            return -EINVAL; // "Invalid user gpu_id", "Failed to find device", no pdd
        auto drm = fileOf(static_cast<int>(d.drm_fd));
        if (!drm)
            return -EINVAL; // "Invalid render node file descriptor sent from plugin"
        bool hasVm = p.vmOfGpu.count(d.actual_gpu_id) || p.restored ||
                     std::any_of(p.bos.begin(), p.bos.end(), [&](const auto& bo) {
                         return bo->actualGpuId == d.actual_gpu_id;
                     });
        if (hasVm)
            return -EINVAL; // pdd->drm_file already set
        if (drm->kind != File::Render || drm->minor != minor)
            return -EINVAL; // kfd_process_device_init_vm: a drm file of another device
        actualOfUser[d.user_gpu_id] = d.actual_gpu_id;
        drmFiles[d.actual_gpu_id] = static_cast<int>(d.drm_fd);
        vms[d.actual_gpu_id] = drm.get();
    }
    if (!get32(cur, end, &nDev) || !get32(cur, end, &nBos) || !get32(cur, end, &nObj) ||
        nDev != args->num_devices || nBos != args->num_bos || nObj != args->num_objects)
        return -EINVAL;
    for (uint32_t i = 0; i < nDev; ++i) {
        uint32_t user;
        if (!get32(cur, end, &user) || !actualOfUser.count(user))
            return -EINVAL;
    }
    // criu_restore_bos: the BOs' private data must be there; each BO needs a device of the
    // process (kfd_process_device_data_by_id, else -ENODEV), a doorbell BO is the process's
    // doorbell slice and an MMIO-remap BO one page (criu_restore_memory_of_gpu).
    std::vector<std::pair<uint32_t, uint64_t>> boPriv(nBos);
    for (auto& [tag, seed] : boPriv)
        if (!get32(cur, end, &tag) || !get64(cur, end, &seed))
            return -EINVAL;
    auto* bos = userPtr<kfd_criu_bo_bucket>(args->bos);
    for (uint32_t b = 0; b < nBos; ++b) {
        if (!actualOfUser.count(bos[b].gpu_id))
            return -ENODEV; // "Failed to get pdd"
        if ((bos[b].alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL) &&
            bos[b].size != kDoorbellSlice)
            return -EINVAL;
        if ((bos[b].alloc_flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) && bos[b].size != kPage)
            return -EINVAL; // "Invalid page size"
    }
    // criu_restore_objects, then "Invalid private data size" when bytes are left over.
    uint32_t objLen;
    if (!get32(cur, end, &objLen) || static_cast<uint64_t>(end - cur) < objLen)
        return -EINVAL; // "Invalid private data size"
    const uint8_t* objects = cur;
    cur += objLen;
    FakeProcess runtime;
    if (!parseRuntimeState(cur, end, runtime, actualOfUser) || cur != end ||
        nObj < runtimeObjects(runtime))
        return -EINVAL; // "Invalid private data size"
    std::vector<std::shared_ptr<FakeBo>> created;
    // Restored BOs take render-node offsets 1 GiB past the next fresh one (so that they differ
    // from the dumped ones on this machine), and fresh ones go on after them: one counter.
    nextMmapOffset_ += 0x40000000ull;
    for (uint32_t b = 0; b < nBos; ++b) {
        auto bo = std::make_shared<FakeBo>();
        bo->addr = bos[b].addr;
        bo->size = bos[b].size;
        bo->allocFlags = bos[b].alloc_flags;
        bo->actualGpuId = actualOfUser.at(bos[b].gpu_id);
        bo->privTag = boPriv[b].first;
        bo->patternSeed = boPriv[b].second;
        if (kfd::boMappedThroughKfd(bo->allocFlags)) {
            bo->mmapOffset = kfdMmapOffset(bo->allocFlags, bo->actualGpuId);
            if (int e = kfdPageOffset(p, bo->mmapOffset, &bo->mmapOffset))
                return e;
        } else if (bo->allocFlags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
            // criu_restore_memory_of_gpu: a userptr BO registers the user address it had
            // (bo_priv->user_addr, the bucket's offset), the restored process's own memory there.
            if (bos[b].offset & (kPage - 1))
                return -EINVAL;
            bo->mmapOffset = bos[b].offset;
        } else {
            bo->mmapOffset = nextMmapOffset_;
            nextMmapOffset_ += pageAlign(bo->size);
        }
        if (kfd::boHasContents(bo->allocFlags) && !bo->isPattern()) {
            bo->data.assign(bo->size, std::byte{0});
            giveMemory(*bo);
        }
        created.push_back(bo);
    }
    for (uint32_t b = 0; b < nBos; ++b) {
        bos[b].restored_offset = created[b]->mmapOffset;
        bos[b].dmabuf_fd = kfd::kInvalidFd;
        if (kfd::boHasContents(created[b]->allocFlags)) {
            auto d = std::make_shared<File>();
            d->kind = File::Dmabuf;
            d->bo = created[b];
            bos[b].dmabuf_fd = static_cast<uint32_t>(installFd(d));
        }
    }
    for (uint32_t b = 0; b < nBos; ++b) // criu_restore_bo maps each BO where it was mapped
        if (b < runtime.bos.size())
            created[b]->mappedOn = runtime.bos[b]->mappedOn;
    p.bos = created;
    p.objects.assign(objects, objects + objLen);
    p.numObjects = nObj - runtimeObjects(runtime);
    p.queues = runtime.queues;
    p.events = runtime.events;
    p.eventPageHandle = runtime.eventPageHandle;
    for (auto& [actual, user] : p.userOfActual)
        for (const auto& [u, a] : actualOfUser)
            if (a == actual)
                user = u;
    p.drmFileOfGpu = drmFiles;
    p.vmOfGpu = vms; // kfd_process_device_init_vm from each bucket's drm_fd
    p.restored = true;
    ++p.evictions; // queues stay evicted until RESUME
    return 0;
}

int FakeKernel::opResume(kfd_ioctl_criu_args* args) {
    auto it = processes_.find(static_cast<int>(args->pid));
    if (it == processes_.end())
        return -ESRCH;
    FakeProcess& target = *it->second;
    if (!target.restored || target.resumed)
        return -EINVAL;
    target.resumed = true;
    --target.evictions;
    return 0;
}

// ------------------------------------------------------------------------------ libdrm

/// A KFD BO as the fake libdrm sees it: its bytes, or its pattern (reads generate it, writes
/// are checked against it).
class FakeKernel::BoMemory final : public fakesdma::Memory {
public:
    explicit BoMemory(std::shared_ptr<FakeBo> bo) : bo_(std::move(bo)) {}
    uint64_t size() const override { return bo_->size; }
    void read(uint64_t offset, std::span<std::byte> out) override {
        bo_->read(offset, out.data(), out.size());
    }
    void write(uint64_t offset, std::span<const std::byte> in) override {
        bo_->write(offset, in.data(), in.size());
    }

private:
    std::shared_ptr<FakeBo> bo_;
};

int64_t FakeKernel::gpuOfRenderFd(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    auto f = fileOf(fd);
    if (!f)
        return -EBADF;
    if (f->kind != File::Render || foreignMinors_.count(f->minor))
        return -EINVAL;
    for (const auto& [g, m] : gpus_)
        if (m == f->minor)
            return g;
    return -ENODEV;
}

int FakeKernel::importDmabuf(int64_t gpu, int fd, std::shared_ptr<fakesdma::Memory>* memory) {
    std::lock_guard<std::mutex> lock(mu_);
    auto f = fileOf(fd);
    if (!f && foreignDmabufs_)
        for (const auto& [g, minor] : gpus_)
            if (g == gpu)
                return foreignDmabufs_->importDmabuf(minor, fd, memory);
    if (!f || f->kind != File::Dmabuf)
        return -EINVAL;
    if (f->bo->actualGpuId != gpu)
        return -EINVAL; // the test machine has no P2P: copies must run on the BO's own GPU
    *memory = std::make_shared<BoMemory>(f->bo);
    return 0;
}

void FakeKernel::copied(int64_t gpu, bool toBo, uint64_t bytes) {
    if (sampleRss_)
        peakRss_ = std::max(peakRss_, currentRss());
    if (observer_)
        observer_->sdmaCopy(static_cast<uint32_t>(gpu), toBo, bytes);
}

} // namespace fakekfd
