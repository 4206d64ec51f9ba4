#pragma once
/// \file
/// A stateful fake of the kernel and libdrm_amdgpu behind kfd::KernelInterface: /dev/kfd with
/// AMDKFD_IOC_GET_VERSION and the five AMDKFD_IOC_CRIU_OP ops on the real structs (checking
/// sizes, pointers, op order, pids and counts, failing as the kernel does), render nodes that
/// answer DRM_IOCTL_VERSION, /proc of fake tasks, pidfd_getfd, kcmp, dmabuf fds, and an SDMA
/// engine that parses the IBs the backend builds and executes COPY_LINEAR packets between BO
/// memory and user memory when a fence is waited for.

#include "fake_device_dir.h"
#include "fake_libdrm.h"
#include "gem/list_handles.h"
#include "kfd/kernel_interface.h"
#include "kfd/kfd_uapi.h"
#include "topology/topology.h"

#include <fcntl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace fakekfd {

/// kfd_doorbell_process_slice of the fake's (SOC15) GPUs: 1024 doorbells of 8 bytes.
inline constexpr uint64_t kDoorbellSlice = 8192;

/// Contents of a pattern BO at `offset` (BOs too large to keep in memory).
uint8_t patternByte(uint64_t seed, uint64_t offset);

/// CPU-visible memory of a BO or a kfd page: bytes of `fd` from `base` on. `owned`: the fd is
/// this region's alone and closes with it (a memfd); else it is shared memory of a driver
/// (tests/kfd/driver: a loop block device every process maps).
struct MemoryRegion {
    int fd = -1;
    uint64_t base = 0;
    bool owned = false;
};

/// Where the fake puts the CPU-visible memory of BOs and kfd pages (setCpuMappableBos): memfds
/// of this process by default; the user-space driver (tests/kfd/driver) places it in one memory
/// shared by every process of its machine.
class MemoryPlacement {
public:
    virtual ~MemoryPlacement() = default;
    /// Memory for a BO of `size` bytes whose render-node mmap offset is `mmapOffset`: 0 or -errno.
    virtual int placeBo(uint64_t mmapOffset, uint64_t size, MemoryRegion* out) = 0;
    /// Memory for a kfd page (a doorbell slice or an MMIO page) of `size` bytes of a process.
    virtual int placeKfdPage(uint64_t size, MemoryRegion* out) = 0;
    /// Whether a kfd page's mmap offset is where it lies (`base` of its region) instead of the
    /// kernel's (type and gpu_id in the high bits): the user-space driver's one memory, whose
    /// block device cannot be mapped at the kernel's offsets (tests/kfd/DRIVER.md).
    virtual bool kfdOffsetsAreItsOwn() const { return false; }
};

/// Dma-bufs the fake KFD does not make but its libdrm imports: the user-space driver's
/// render-node dma-bufs (tests/kfd/driver), which its SDMA engine copies as a GPU copies any BO
/// of its own device.
class ForeignDmabufs {
public:
    virtual ~ForeignDmabufs() = default;
    /// The memory of the BO dma-buf `fd` exports, importable on the GPU of render minor
    /// `minor`, or -errno (EINVAL: not a dma-buf of this machine's, or of another GPU).
    virtual int importDmabuf(int minor, int fd, std::shared_ptr<fakesdma::Memory>* memory) = 0;
};

/// A buffer object of the fake KFD.
struct FakeBo {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint64_t mmapOffset = 0;
    uint32_t actualGpuId = 0;
    uint32_t allocFlags = 0;
    std::vector<std::byte> data; ///< contents (empty for pattern BOs)
    uint64_t patternSeed = 0;    ///< nonzero: contents are patternByte(seed, offset)
    uint64_t patternBytesWritten = 0;
    uint64_t patternMismatches = 0;
    uint32_t privTag = 0; ///< per-BO private state travelling in priv_data (the KFD idr handle
                          ///< of BOs made by ALLOC_MEMORY_OF_GPU)
    MemoryRegion mem;     ///< fd >= 0: contents live there, which mmap of the BO maps
    std::set<uint32_t> mappedOn; ///< actual gpu_ids it is mapped to (MAP_MEMORY_TO_GPU)

    FakeBo() = default;
    FakeBo(const FakeBo&) = delete;
    FakeBo& operator=(const FakeBo&) = delete;
    ~FakeBo();
    bool isPattern() const { return patternSeed != 0; }
    /// The contents (pattern BOs: generated), whichever storage holds them.
    void read(uint64_t offset, void* out, uint64_t len) const;
    void write(uint64_t offset, const void* in, uint64_t len);
};

/// A user-mode queue (struct queue of kfd_process_queue_manager), made by CREATE_QUEUE.
struct FakeQueue {
    uint32_t id = 0;
    uint32_t actualGpuId = 0;
    uint32_t type = 0; ///< KFD_IOC_QUEUE_TYPE_*
    uint32_t percentage = 0, priority = 0;
    uint64_t ringBase = 0, ringSize = 0, writePtr = 0, readPtr = 0;
    uint64_t eopBase = 0, eopSize = 0, ctxSave = 0, ctxSaveSize = 0, ctlStackSize = 0;
    uint32_t doorbellIndex = 0; ///< in the process's doorbell page of its GPU
};

/// An event (struct kfd_event), made by CREATE_EVENT.
struct FakeEvent {
    uint32_t id = 0;
    uint32_t type = 0; ///< KFD_IOC_EVENT_*
    bool autoReset = false;
    bool signaled = false;
};

/// A KFD process (struct kfd_process).
struct FakeProcess {
    int pid = 0;        ///< host pid
    uint32_t nsPid = 0; ///< pid in its own namespace (PROCESS_INFO reports it)
    std::map<uint32_t, uint32_t> userOfActual; ///< its devices: actual gpu_id -> user gpu_id
    std::vector<std::shared_ptr<FakeBo>> bos;
    std::vector<uint8_t> objects; ///< queues/events/SVM state: opaque, travels in priv_data
    uint32_t numObjects = 0;
    int evictions = 0;     ///< PROCESS_INFO / RESTORE evict; UNPAUSE / RESUME restore
    bool paused = false;   ///< queues_paused
    bool restored = false; ///< RESTORE done
    bool resumed = false;  ///< RESUME done
    std::map<uint32_t, int> drmFileOfGpu; ///< RESTORE: the render file each GPU's VM came from
    // What the ioctls of a running ROCm process (fake_kfd_runtime.cpp) made; queues and events
    // travel in priv_data after `objects`.
    std::map<uint32_t, const void*> vmOfGpu; ///< ACQUIRE_VM: actual gpu_id -> its drm file
    std::vector<FakeQueue> queues;
    std::vector<FakeEvent> events;
    uint64_t eventPageHandle = 0; ///< CREATE_EVENT's event_page_offset (a BO handle), 0 = none
    int32_t xnack = 0;
    std::map<uint32_t, uint64_t> scratchOfGpu, trapHandlerOfGpu;
    std::map<uint64_t, MemoryRegion>
        kfdPages; ///< mmap offset (type, gpu) -> its doorbell/MMIO page

    FakeProcess() = default;
    FakeProcess(const FakeProcess&) = delete;
    FakeProcess& operator=(const FakeProcess&) = delete;
    ~FakeProcess();
};

/// One BO a test process starts with.
struct BoSpec {
    int gpu = 0; ///< index into the machine's GPUs
    uint64_t size = 0;
    uint32_t flags = 0;
    bool pattern = false;
};

/// A test process.
struct ProcessSpec {
    uint32_t nsPid = 0; ///< 0 = same as the host pid
    std::vector<BoSpec> bos;
    std::vector<uint8_t> objects = {1, 2, 3, 4, 5, 6, 7, 8};
    uint32_t numObjects = 3;
    /// user gpu_id per GPU index (a process restored earlier keeps its old ids); empty = actual.
    std::map<int, uint32_t> userIds;
    /// GPU indices the process cannot see (its device cgroup hides them).
    std::set<int> hiddenGpus;
};

/// Receives what the fake does, for ordering checks (GoogleMock implements it in tests).
class Observer {
public:
    virtual ~Observer() = default;
    virtual void criuOp(int pid, uint32_t op, int result) = 0;
    virtual void sdmaCopy(uint32_t gpuId, bool toBo, uint64_t bytes) = 0;
};

/// The fake kernel of one machine.
class FakeKernel final : public kfd::KernelInterface, private fakesdma::Host {
public:
    /// A machine with the GPUs of `topology`, device nodes under `devRoot`.
    FakeKernel(const topology::Topology& topology, std::string devRoot);
    ~FakeKernel() override;

    // ------------------------------------------------------------------- test controls
    /// Creates a task with a KFD process: fd 3 is /dev/kfd, fds 4.. the render nodes of its GPUs.
    FakeProcess& addProcess(int pid, const ProcessSpec& spec);
    /// The KFD process of a host pid, or nullptr.
    FakeProcess* process(int pid);
    /// Adds a task without KFD holding fds of the given paths (e.g. a foreign render node).
    void addPlainTask(int pid, const std::vector<std::string>& paths);
    /// criu seizes `pid` (its KFD file may then be used from here).
    void seize(int pid) { traced_.insert(pid); }
    /// criu lets `pid` go (or dies: the kernel detaches its tracees).
    void release(int pid) { traced_.erase(pid); }
    /// Who else the kernel says traces a task (the user-space driver reads TracerPid of
    /// /proc/PID/status): `tracer(tracee, caller)` true when `caller` is `tracee`'s ptrace
    /// parent. Asked when seize() did not say so.
    void setTracerCheck(std::function<bool(int tracee, int caller)> tracer) {
        tracerCheck_ = std::move(tracer);
    }
    /// The pid a task has in its own pid namespace (the user-space driver reads NSpid of
    /// /proc/PID/status): what PROCESS_INFO reports of a process that opened /dev/kfd here
    /// (criu_process_info: task_pid_nr_ns(lead_thread, task_active_pid_ns(lead_thread))).
    /// Unset: the pid the fake knows the task by.
    void setNamespacePid(std::function<uint32_t(int pid)> nsPid) { nsPidOf_ = std::move(nsPid); }
    /// Whether `pid` is traced (by criu, or by this process through ptraceSeize).
    bool traced(int pid) {
        std::lock_guard<std::mutex> lock(mu_);
        return traced_.count(pid) != 0;
    }
    /// Task `pid` exits: its fds close, and its KFD process goes when no fd holds it any more
    /// (fds of it this process holds keep it, as a struct file keeps kfd_process).
    void exitTask(int pid);
    /// Task `pid` has exited on the host (the user-space driver reaps such tasks, as the kernel
    /// closes a dead task's files): every fd its task holds closes, then exitTask(pid).
    void reapTask(int pid);
    /// The pids of the tasks that hold files of the fake, and of the KFD processes.
    std::vector<int> taskPids();
    std::vector<int> processPids();
    /// The pid whose context open() of /dev/kfd runs in (restore runs in the restored task).
    void setCurrentPid(int pid) { currentPid_ = pid; }
    /// A render node minor whose DRM driver is not amdgpu.
    void addForeignRenderNode(int minor) { foreignMinors_.insert(minor); }
    /// Task `pid` makes a BO on its render-node fd `taskFd` itself (libdrm's amdgpu_bo_alloc,
    /// as Mesa does beside HIP): a GEM handle in that render file, the lowest free from 1.
    /// Returns the handle.
    uint32_t addRenderBo(int pid, int taskFd, uint64_t size, uint64_t domains, uint64_t flags);
    /// Whether render files answer GEM_LIST_HANDLES (Linux 6.18+; default) or EINVAL (before).
    void setListHandles(bool present) { listHandles_ = present; }
    /// A GPU not given to the container the processes run in: its render node is absent from
    /// /dev (stat and open answer ENOENT) and the device cgroup refuses it (removeRenderNodeFile
    /// and denyRenderNode); sysfs still lists it.
    void hideRenderNode(int minor) {
        removeRenderNodeFile(minor);
        denyRenderNode(minor);
    }
    /// The device cgroup refuses the GPU: opening its render node (any node of 226:minor) fails
    /// EPERM and a process opening /dev/kfd gets no device of it, as KFD checks the cgroup.
    void denyRenderNode(int minor) { devDir_.deny(minor); }
    /// The GPU's render node is not in /dev (a restored container's /dev holds the old pod's
    /// nodes); mknod of 226:minor (deviceNodes().makeCharNode) makes one.
    void removeRenderNodeFile(int minor) { devDir_.remove(minor); }
    /// The nodes made through deviceNodes() that are still there, by path.
    std::map<std::string, int> madeNodes() { return devDir_.made(); }
    /// What AMDKFD_IOC_GET_VERSION answers.
    void setVersion(uint32_t major, uint32_t minor) { version_ = {major, minor}; }
    /// What opening /dev/kfd fails with (0 = succeeds).
    void setKfdOpenError(int negErrno) { kfdOpenError_ = negErrno; }
    /// Makes the `nth` next call named `name` fail with -err. Names: "open", "ioctl:<OP>"
    /// (GET_VERSION, PROCESS_INFO, CHECKPOINT, UNPAUSE, RESTORE, RESUME, DRM_VERSION) and the
    /// KernelInterface and sdma::Libdrm method names (e.g. "submitSdma").
    void failCall(const std::string& name, int err, int nth = 1);
    /// Receives every CRIU op and SDMA copy.
    void setObserver(Observer* o) { observer_ = o; }
    /// Fences never signal (a hung engine).
    void hangSdma(bool on) { libdrm_.hang(on); }
    /// BOs made by ALLOC_MEMORY_OF_GPU or RESTORE keep VRAM/GTT contents in memfds that mmap of
    /// the render node (or /dev/kfd) at their offset maps, as a running process sees them.
    void setCpuMappableBos(bool on) { cpuMappable_ = on; }
    /// Where that memory goes (default: memfds of this process).
    void setMemoryPlacement(std::shared_ptr<MemoryPlacement> placement) {
        placement_ = std::move(placement);
    }
    /// The libdrm's dma-buf imports of fds that are no files of this fake go to `dmabufs`
    /// (nullptr: none; it must outlive their use).
    void setForeignDmabufs(ForeignDmabufs* dmabufs) { foreignDmabufs_ = dmabufs; }
    /// Numbers fds from `first` on (two machines in one test process keep apart).
    void setFirstFd(int first) { nextFd_ = first; }
    /// Samples RSS at every SDMA execution.
    void sampleRss(bool on) { sampleRss_ = on; }

    /// criu's FileRef-to-be: this process's copy of fd `taskFd` of `pid`.
    int criuCopyOf(int pid, int taskFd) { return pidGetFd(pid, taskFd); }
    /// Open fds of this process (the plugin's), for leak checks.
    size_t openFdCount();
    /// Largest userptr registration and the peak of concurrently registered userptr bytes.
    uint64_t largestUserptr() { return libdrm_.largestUserptr(); }
    uint64_t peakUserptrBytes() { return libdrm_.peakUserptr(); }
    /// Largest RSS (bytes) seen while sampling.
    uint64_t peakRss() const { return peakRss_; }
    /// SDMA packets executed, and faults seen while executing IBs.
    uint64_t copyPackets() { return libdrm_.copyPackets(); }
    std::vector<std::string> gpuFaults() { return libdrm_.faults(); }
    /// libdrm objects alive (devices, BOs, VA ranges, contexts, lists), for leak checks.
    size_t liveDrmObjects() { return libdrm_.liveObjects(); }
    /// The GPUs of this machine.
    const std::vector<std::pair<uint32_t, int>>& gpus() const { return gpus_; }
    std::string kfdPath() const { return devRoot_ + "/kfd"; }
    std::string renderPath(int minor) const {
        return devRoot_ + "/dri/renderD" + std::to_string(minor);
    }

    // ---------------------------------------------- the current task's own calls (an interposer)
    /// open() by the current task: the fd also enters its fd table (listProcessFds, pidGetFd).
    int taskOpen(const std::string& path, int flags);
    /// close() by the current task.
    int taskClose(int fd);
    /// criu restoring an fd at its number: the current task's `to` becomes the file of `from`,
    /// `from` is closed. -EBUSY when `to` is taken.
    int taskMoveFd(int from, int to);
    /// mmap() of a fake file (kfd_mmap / amdgpu_gem mmap): maps the BO, doorbell or event page at
    /// the offset. Returns the address, or a negative errno.
    intptr_t mmap(void* addr, size_t len, int prot, int flags, int fd, uint64_t offset);
    /// What mmap of `len` bytes of fake file `fd` at `offset` maps (the kernel's checks of kfd_mmap
    /// and amdgpu's GEM mmap): 0 and the memory in *out, or -errno.
    int mappingOf(int fd, size_t len, uint64_t offset, MemoryRegion* out);
    /// Where queue `q`'s doorbell of process `p` lies: its process's doorbell page on the queue's
    /// GPU once a mapping made it, plus the doorbell's byte offset in it; false before.
    static bool doorbellOf(const FakeProcess& p, const FakeQueue& q, MemoryRegion* out);
    /// The requests of the ioctls on /dev/kfd the fake answered ENOTTY (not implemented).
    std::vector<unsigned long> unservedIoctls() {
        std::lock_guard<std::mutex> lock(mu_);
        return unserved_;
    }
    /// The BO of the current task's process with GPU VA `addr`, or nullptr.
    std::shared_ptr<FakeBo> boAt(int pid, uint64_t addr);

    // ------------------------------------------------------------------ KernelInterface
    int open(const std::string& path, int flags) override;
    int close(int fd) override;
    int dup(int fd) override;
    int ioctl(int fd, unsigned long request, void* arg) override;
    int stat(const std::string& path, struct stat* st) override;
    int fstat(int fd, struct stat* st) override;
    topology::DeviceNodeCalls& deviceNodes() override { return nodes_; }
    int sameFile(int fdA, int fdB) override;
    int listPids(std::vector<int>* pids) override;
    int listProcessFds(int pid, std::vector<kfd::ProcFd>* fds) override;
    int pidGetFd(int pid, int targetFd) override;
    int ptraceSeize(int pid) override;
    int ptraceDetach(int pid) override;
    sdma::Libdrm& libdrm() override { return libdrm_; }

private:
    struct File {
        enum Kind { Kfd, Render, Dmabuf } kind = Kfd;
        std::shared_ptr<FakeProcess> proc;                   // Kfd
        int minor = -1;                                      // Render
        std::map<uint32_t, gem::GemListHandlesEntry> gemBos; // Render: its GEM handles
        std::shared_ptr<FakeBo> bo;                          // Dmabuf
    };
    struct Task;
    class BoMemory;

    // ------------------------------------------------------------ fakesdma::Host
    int openRenderNode(const std::string& path) override { return open(path, O_RDWR); }
    int closeRenderNode(int fd) override { return close(fd); }
    int64_t gpuOfRenderFd(int fd) override;
    int importDmabuf(int64_t gpu, int fd, std::shared_ptr<fakesdma::Memory>* memory) override;
    void copied(int64_t gpu, bool toBo, uint64_t bytes) override;

    int injected(const std::string& name);
    int installFd(std::shared_ptr<File> f);
    std::shared_ptr<File> fileOf(int fd);
    int criuOp(File& f, kfd_ioctl_criu_args* args);
    int listRenderHandles(File& f, gem::GemListHandles* args);
    int opProcessInfo(FakeProcess& p, kfd_ioctl_criu_args* args);
    int opCheckpoint(FakeProcess& p, kfd_ioctl_criu_args* args);
    int opRestore(FakeProcess& p, kfd_ioctl_criu_args* args);
    int opResume(kfd_ioctl_criu_args* args);
    std::vector<uint8_t> privDataOf(const FakeProcess& p) const;
    int runtimeIoctl(File& f, unsigned long request, void* arg);
    int acquireVm(FakeProcess& p, kfd_ioctl_acquire_vm_args* a);
    int getApertures(FakeProcess& p, kfd_ioctl_get_process_apertures_new_args* a);
    int allocMemory(FakeProcess& p, kfd_ioctl_alloc_memory_of_gpu_args* a);
    int freeMemory(FakeProcess& p, kfd_ioctl_free_memory_of_gpu_args* a);
    int mapMemory(FakeProcess& p, kfd_ioctl_map_memory_to_gpu_args* a, bool map);
    int createQueue(FakeProcess& p, kfd_ioctl_create_queue_args* a);
    int createEvent(FakeProcess& p, kfd_ioctl_create_event_args* a);
    int waitEvents(FakeProcess& p, kfd_ioctl_wait_events_args* a);
    /// The actual gpu_id of the process's device with user gpu_id `user`, or 0.
    static uint32_t actualOf(const FakeProcess& p, uint32_t user);
    std::shared_ptr<FakeBo> boOfHandle(FakeProcess& p, uint64_t handle);
    void giveMemory(FakeBo& bo);
    static void appendRuntimeState(const FakeProcess& p, std::vector<uint8_t>& v);
    static bool parseRuntimeState(const uint8_t*& cur, const uint8_t* end, FakeProcess& p,
                                  const std::map<uint32_t, uint32_t>& actualOfUser);
    /// With a placement whose kfd offsets are its own, *offset becomes where process `p`'s kfd
    /// page `key` (type | actual gpu_id, the kernel's layout) lies, placed now if it was not;
    /// else *offset (the kernel's) stays. 0 or -errno.
    int kfdPageOffset(FakeProcess& p, uint64_t key, uint64_t* offset);
    /// The page of `p` with kernel key `key`, placed (`limit` bytes) if it was not: -errno or 0.
    int kfdPageOf(FakeProcess& p, uint64_t key, uint64_t limit, MemoryRegion* out);
    /// Whether the current task may use process `p`'s file: its own, or its ptrace parent's.
    bool mayUse(const FakeProcess& p);
    static uint32_t runtimeObjects(const FakeProcess& p) {
        return static_cast<uint32_t>(p.queues.size() + p.events.size());
    }
    std::shared_ptr<FakeProcess> processForCurrent();

    std::mutex mu_;
    std::string devRoot_;
    std::vector<std::pair<uint32_t, int>> gpus_; ///< gpu_id, render minor
    std::map<int, std::shared_ptr<File>> fds_;
    int nextFd_ = 1000;
    std::map<int, std::shared_ptr<Task>> tasks_;
    std::map<int, std::shared_ptr<FakeProcess>> processes_;
    std::set<int> traced_;
    std::function<bool(int, int)> tracerCheck_;
    std::function<uint32_t(int)> nsPidOf_;
    std::set<int> foreignMinors_;
    /// /dev and the devices cgroup: render nodes by their path under devRoot_/dri.
    testsupport::FakeDeviceDir devDir_{[this](const std::string& path) {
        std::string prefix = devRoot_ + "/dri/renderD";
        return path.compare(0, prefix.size(), prefix) == 0 ? atoi(path.c_str() + prefix.size())
                                                           : -1;
    }};
    testsupport::FakeDeviceNodeCalls nodes_{
        {[this](const std::string& p, struct stat* st) { return stat(p, st); },
         [this](const std::string& p) { return open(p, O_RDWR); }, [this](int fd) { close(fd); }},
        devDir_};
    int currentPid_ = 1;
    std::pair<uint32_t, uint32_t> version_ = {1, 11};
    int kfdOpenError_ = 0;
    std::map<std::string, std::pair<int, int>> faults_; ///< name -> (countdown, errno)
    Observer* observer_ = nullptr;
    uint64_t nextMmapOffset_ = 0x100000;
    uint64_t nextBoAddr_ = 0x7f0000000000ull;

    bool cpuMappable_ = false;
    std::shared_ptr<MemoryPlacement> placement_;
    ForeignDmabufs* foreignDmabufs_ = nullptr;
    bool listHandles_ = true;
    std::vector<unsigned long> unserved_;
    bool sampleRss_ = false;
    uint64_t peakRss_ = 0;
    fakesdma::FakeLibdrm libdrm_{*this};
};

/// Current resident set size of this process in bytes.
uint64_t currentRss();

} // namespace fakekfd
