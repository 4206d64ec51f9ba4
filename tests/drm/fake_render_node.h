#pragma once
/// \file
/// A stateful fake of the amdgpu render-node kernel interface and of the libdrm_amdgpu calls the
/// backend uses, on the real struct layouts: GPUs with render minors, open DRM files with GEM
/// handle tables and GPU VMs, BOs with contents and mmap offsets, dma-bufs, processes' fds, and
/// an SDMA engine that executes linear-copy packets. Semantics follow the kernel: lowest free
/// handle from 1 on create and import (idr_alloc), an import of a dma-buf one of this GPU's BOs
/// exported is that BO (amdgpu_gem_prime_import), EINVAL on an overlapping VA map, the
/// grow-and-retry protocol of LIST_HANDLES and GET_MAPPING_INFO, one libdrm device per GPU
/// however many fds are opened (libdrm's fd_compare), and the differences between kernel
/// generations (KernelProfile).

#include "amdgpu-drm/kernel_interface.h"
#include "amdgpu-drm/paths.h"
#include "fake_device_dir.h"
#include "fake_libdrm.h"

#include <sys/ioctl.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fakedrm {

/// Where the naive VA manager of the fake libdrm starts handing out addresses.
inline constexpr uint64_t kLibdrmVaBase = 0x0000'0001'0000'0000ull;
/// pid the fake reports for the calling process (criu).
inline constexpr int kSelfPid = 4242;

/// The kernel generations whose render-node interface differs.
enum class KernelProfile {
    /// Before 6.18: LIST_HANDLES and GET_MAPPING_INFO answer EINVAL, and so does CHANGE_HANDLE
    /// (a core ioctl number the kernel does not know).
    Before6_18,
    /// 6.18.0 to 6.18.35: CHANGE_HANDLE runs the code before attempt 4 disabled it: a new
    /// handle above INT_MAX is EINVAL, then the handle is looked up (unknown: ENOENT), then
    /// handle == new_handle returns 0; a new handle in use (or 0) is ENOSPC (idr_alloc of a
    /// one-number range).
    Linux6_18,
    /// 7.x (and 6.18.36+, 7.0.13+): CHANGE_HANDLE is drm_invalid_op, EINVAL whatever it is given.
    Linux7,
};

/// One fake GPU.
struct GpuSpec {
    unsigned minor = 128;
    std::string driver = "amdgpu";
    uint32_t deviceId = 0x740f;
    uint32_t family = AMDGPU_FAMILY_AI;
    uint32_t cus = 104;
    uint64_t vramSize = 64ull << 30;
    uint64_t visibleVram = 64ull << 30;
    uint32_t mecFw = 0x1c;
    uint32_t sdmaFw = 0x10;
    uint32_t sdmaEngines = 2;
};

/// The pages of a BO from its first export on: a memfd mapped MAP_SHARED, so that its dma-buf
/// fds (real fds of that memfd) are the same memory in every process they reach, forks of this
/// one included (as criu's restored tasks are forks of criu).
struct SharedPages {
    SharedPages(int fd, std::byte* addr, uint64_t size, uint64_t inode)
        : fd(fd), addr(addr), size(size), inode(inode) {}
    ~SharedPages();
    SharedPages(const SharedPages&) = delete;
    SharedPages& operator=(const SharedPages&) = delete;
    int fd;
    std::byte* addr;
    uint64_t size;
    uint64_t inode; ///< the memfd's: the dma-buf's identity from the first export on
};

/// Memory of a BO placed outside the fake's own heap (the user-space driver's machine memory,
/// which other processes map at the BO's mmap offset).
struct PlacedMemory {
    std::byte* bytes = nullptr;
    uint64_t offset = 0;        ///< where it lies: the BO's GEM_MMAP offset
    std::shared_ptr<void> keep; ///< releases the memory with the last BO that holds it
};

/// Where GEM_CREATE puts a BO's bytes, when not in the fake's heap.
class BoPlacement {
public:
    virtual ~BoPlacement() = default;
    /// Memory of `size` bytes (a page multiple), zero-filled: 0 or -errno.
    virtual int place(uint64_t size, PlacedMemory* out) = 0;
};

/// A BO object (shared by every handle and device that refers to it).
struct Bo {
    uint64_t id = 0;
    unsigned minor = 0;
    uint64_t size = 0;
    uint64_t domains = 0;
    uint64_t flags = 0;
    uint64_t alignment = 0;
    bool imported = false;    ///< imported from another device's dma-buf
    uint64_t dmabufInode = 0; ///< the dma-buf identity (the exporter's id)
    uint64_t mmapOffset = 0;  ///< 0 until GEM_MMAP
    std::shared_ptr<std::vector<std::byte>> storage;
    std::shared_ptr<SharedPages> pages; ///< once exported: the bytes, shared between processes
    std::byte* userptr = nullptr;       ///< userptr BOs point at host memory
    PlacedMemory placed;                ///< memory of a BoPlacement (bytes null: none)
    std::byte* bytes() {
        return userptr        ? userptr
               : pages        ? pages->addr
               : placed.bytes ? placed.bytes
                              : storage->data();
    }
    /// GPU work in flight on the BO: its fences signal when the fake's monotonic clock reaches
    /// busyUntilNs (kNever: a hung GPU), and it then leaves `pendingWrite` in the BO.
    uint64_t busyUntilNs = 0;
    std::vector<std::byte> pendingWrite;
    static constexpr uint64_t kNever = ~0ull;
};

/// One GPU VA mapping of a DRM file's VM.
struct Mapping {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint64_t offset = 0;
    uint64_t flags = 0;
    std::shared_ptr<Bo> bo;
};

/// A GPU context (amdgpu_ctx): its priority and what QUERY_STATE2 reports of it.
struct Ctx {
    int32_t priority = AMDGPU_CTX_PRIORITY_NORMAL;
    uint64_t query2Flags = 0; ///< AMDGPU_CTX_QUERY2_FLAGS_* (tests set reset, guilty, ...)
    uint64_t lastSeq = 0;     ///< the sequence number of its last AMDGPU_CS
};

/// A fence: signaled once the fake's monotonic clock reaches `signalsAtNs` (0: signaled, as the
/// kernel's stub fences are; Bo::kNever: a hung GPU).
struct Fence {
    uint64_t signalsAtNs = 0;
};

/// A syncobj (drm_syncobj): its fence slot holds nothing, a plain fence, or a chain of timeline
/// points (dma_fence_chain) on top of what it held before.
struct Syncobj {
    struct Point {
        uint64_t seqno = 0;
        Fence fence;
    };
    std::optional<Fence> base; ///< the plain fence (under the chain, when one was added on it)
    std::vector<Point> chain;  ///< timeline points, oldest first
    bool empty() const { return !base && chain.empty(); }
};

/// A sync file (sync_file.c): the fences it holds, as dma_fence_unwrap_for_each lists them (one
/// for a syncobj's exported fence, those a merge kept), and the name a merge gave it.
struct SyncFile {
    std::vector<Fence> fences;
    std::string name;
};

/// SYNC_IOC_SET_DEADLINE of a sync file (Linux 6.5; bookworm's linux/sync_file.h lacks it).
struct SyncSetDeadline {
    uint64_t deadlineNs;
    uint64_t pad;
};
inline constexpr unsigned long kSyncIocSetDeadline = _IOW('>', 5, SyncSetDeadline);

/// One open DRM file (drm_file): handles, a VM, contexts and syncobjs.
struct File {
    uint64_t clientId = 0;
    unsigned minor = 0;
    std::map<uint32_t, std::shared_ptr<Bo>> handles;
    std::vector<Mapping> vm;
    std::map<uint32_t, Ctx> contexts;                             ///< by id (idr from 1)
    std::map<uint32_t, std::shared_ptr<Syncobj>> syncobjs;        ///< by handle (idr from 1)
    std::map<uint32_t, std::vector<std::shared_ptr<Bo>>> boLists; ///< AMDGPU_BO_LIST, by handle
    /// Lowest free handle >= 1 (idr_alloc).
    uint32_t freeHandle() const;
    /// The handle of `bo` in this file, or 0.
    uint32_t handleOf(const Bo& bo) const;
};

/// The fake kernel and libdrm.
class FakeKernel final : public drm::KernelInterface, private fakesdma::Host {
public:
    FakeKernel();
    ~FakeKernel() override;

    // ---------------------------------------------------------------- test controls
    /// Adds a GPU (its render node opens as `.../renderD<minor>`).
    void addGpu(const GpuSpec& spec);
    /// The kernel this fake behaves as (every test runs on 7.x unless it says otherwise).
    KernelProfile profile = KernelProfile::Linux7;
    /// How many times each ioctl request was issued (any fd).
    std::map<unsigned long, int> ioctlCounts;
    /// Every GEM_CHANGE_HANDLE asked, on any profile, and whether its file held the handle.
    struct ChangeHandleCall {
        uint32_t handle = 0;
        uint32_t newHandle = 0;
        bool held = false;
    };
    std::vector<ChangeHandleCall> changeHandleCalls;
    /// GET_MAPPING_INFO answers ENOSPC (instead of 0) when the array is too small.
    bool mappingInfoEnospc = false;
    /// Every BO count LIST_HANDLES reports grows by this on each too-small answer (a kernel that
    /// keeps asking for more).
    uint32_t listHandlesInflate = 0;
    /// pidfd_getfd fails with this errno when nonzero.
    int pidGetFdErrno = 0;
    /// Makes the Nth (1-based) ioctl with this request fail with errno; 0 = never.
    void failIoctl(unsigned long request, int nth, int err);
    /// Submits GPU work on BO `handle` of `fd` that finishes `durationNs` from now (Bo::kNever:
    /// never) and then leaves `result` (the BO's size) in it.
    void submitWork(int fd, uint32_t handle, uint64_t durationNs, std::vector<std::byte> result);
    /// SYNCOBJ_CREATE hands out the lowest free handle from this one (1, as the kernel does;
    /// another: a kernel that does not hand out the lowest free handle).
    uint32_t syncobjHandleBase = 1;
    /// Submits GPU work that signals `point` of syncobj `handle` of `fd` (0: its plain fence)
    /// `durationNs` from now (Bo::kNever: never), as a CS with a syncobj out-chunk does.
    void submitSyncobjWork(int fd, uint32_t handle, uint64_t point, uint64_t durationNs);
    /// The process closed its fd `targetFd` (its procfs entries stay, as in a race).
    void forgetProcessFd(int pid, int targetFd) { processFds_.erase({pid, targetFd}); }
    /// The device cgroup refuses the GPU of render `minor`: opening any node of it fails EPERM.
    void denyRenderNode(int minor) { devDir_.deny(minor); }
    /// /dev lacks the render node of `minor` (opening it fails ENOENT) until deviceNodes()
    /// makes one.
    void removeRenderNodeFile(int minor) { devDir_.remove(minor); }
    /// The nodes made through deviceNodes() that are still there, by path.
    std::map<std::string, int> madeNodes() { return devDir_.made(); }
    /// The fake CLOCK_MONOTONIC, in ns; it advances only while a caller waits (GEM_WAIT_IDLE).
    uint64_t nowNs = 1000ull * 1000000000ull;

    /// The file behind an fd (nullptr when the fd is not a DRM file).
    std::shared_ptr<File> fileOf(int fd) const;
    /// Registers `fd` (one of ours) as fd number `targetFd` of process `pid`.
    void setProcessFd(int pid, int targetFd, int fd);
    /// Number of fds currently open.
    size_t openFds() const { return fds_.size(); }
    /// Events in order: "create f<client> h<handle>", "write bo<id>", "map f<client> 0x<addr>",
    /// "sdma" ... (for ordering proofs).
    std::vector<std::string> events;
    /// Every VA range the fake libdrm mapped, with the client id of the VM it went into.
    std::vector<std::pair<uint64_t, Mapping>> libdrmMaps;
    /// GPU faults of AMDGPU_CS submissions (an IB or a copy outside the resident mapped BOs of
    /// the submission, a write through a read-only mapping): the job still completes, as on the
    /// GPU (the kernel only logs a VM fault).
    std::vector<std::string> gpuFaults;
    /// COPY_LINEAR packets AMDGPU_CS submissions ran.
    uint64_t csCopyPackets = 0;
    /// AMDGPU_WAIT_CS finds SDMA submissions never completing (a hung engine).
    bool csHung = false;
    /// GEM_CREATE places BOs' bytes with `placement` (nullptr: the fake's heap); their GEM_MMAP
    /// offset is where it put them. `placement` must outlive the BOs. PRIME_HANDLE_TO_FD of a BO
    /// placed so answers an fd of this fake's own table (no memfd: its pages stay where they were
    /// placed), which PRIME_FD_TO_HANDLE takes and dmabufBo names: whoever placed the memory
    /// makes the dma-buf reachable (the user-space driver's render nodes).
    void setBoPlacement(BoPlacement* placement) { placement_ = placement; }
    /// The BO a dma-buf fd of this fake's table exports (nullptr: not one).
    std::shared_ptr<Bo> dmabufBo(int fd);
    /// The fake libdrm (SDMA hangs, packets executed, live objects).
    fakesdma::FakeLibdrm& fakeLibdrm() { return libdrm_; }

    // ------------------------------------------------------------- KernelInterface
    int open(const std::string& path) override;
    void close(int fd) override;
    int dup(int fd) override;
    int ioctl(int fd, unsigned long request, void* arg) override;
    int fstat(int fd, struct stat* st) override;
    topology::DeviceNodeCalls& deviceNodes() override { return nodes_; }
    void* mmap(int fd, uint64_t offset, uint64_t size, int prot, int* err) override;
    void munmap(void* addr, uint64_t size) override;
    int pidGetFd(int pid, int targetFd) override;
    int sameFile(int pid1, int fd1, int pid2, int fd2) override;
    int selfPid() override { return kSelfPid; }
    uint64_t monotonicNs() override { return nowNs; }

    sdma::Libdrm& libdrm() override { return libdrm_; }
    const topology::sysfs::Dir& files() override { return *files_; }
    /// The backend reads `files` (a tree held in memory) instead of the real file system, which
    /// FakeMachine's temp dir is part of; `files` must outlive this kernel's use.
    void useFiles(const topology::sysfs::Dir& files) { files_ = &files; }

    /// Live libdrm objects (devices, BOs, VA ranges, contexts, lists): 0 after a clean teardown.
    size_t liveLibdrmObjects() { return libdrm_.liveObjects(); }

private:
    struct Gpu {
        GpuSpec spec;
        uint64_t nextMmapOffset = 0x10000000ull;
    };
    struct FdObj {
        std::shared_ptr<File> file;
        std::shared_ptr<Bo> dmabuf;
        bool real = false;                ///< a real fd (of a dma-buf's memfd), closed with ::close
        std::shared_ptr<Syncobj> syncobj; ///< a syncobj's fd (SYNCOBJ_HANDLE_TO_FD)
        std::shared_ptr<SyncFile> syncFile; ///< a sync file's fd (EXPORT_SYNC_FILE, SYNC_IOC_MERGE)
    };

    // ------------------------------------------------------------ fakesdma::Host
    int openRenderNode(const std::string& path) override { return open(path); }
    int closeRenderNode(int fd) override;
    int64_t gpuOfRenderFd(int fd) override;
    int importDmabuf(int64_t gpu, int fd, std::shared_ptr<fakesdma::Memory>* memory) override;
    void mapped(int fd, uint64_t va, uint64_t size) override;
    void copied(int64_t gpu, bool toBo, uint64_t bytes) override;

    /// stat of a render node as this machine's /dev holds it (226:minor, a GPU of this machine).
    int statNode(const std::string& path, struct stat* st);
    /// /dev and the devices cgroup: render nodes by their file name.
    testsupport::FakeDeviceDir devDir_{drm::renderMinorOfPath};
    testsupport::FakeDeviceNodeCalls nodes_{
        {[this](const std::string& p, struct stat* st) { return statNode(p, st); },
         [this](const std::string& p) { return open(p); }, [this](int fd) { close(fd); }},
        devDir_};

    int newFd(FdObj obj);
    Gpu* gpu(unsigned minor);
    int vaMapInto(File& file, const Mapping& m);
    int vaUnmapFrom(File& file, uint64_t addr);
    int vaClear(File& file, uint64_t addr, uint64_t size);
    int ioctlGem(File& file, unsigned long request, void* arg);
    int changeHandle(File& file, void* arg);
    int listHandles(File& file, void* arg);
    int gemOp(File& file, void* arg);
    int info(File& file, void* arg);
    int primeExport(File& file, void* arg);
    int primeImport(File& file, void* arg);
    // fake_cs.cpp: DRM_IOCTL_AMDGPU_CS and DRM_IOCTL_AMDGPU_WAIT_CS of SDMA copies.
    int commandSubmit(File& file, void* arg);
    int waitCs(File& file, void* arg);
    /// The resident mapping of `file` holding [va, va + bytes): in `listed` or VM_ALWAYS_VALID.
    const Mapping* residentMapping(const File& file, uint64_t va, uint64_t bytes,
                                   const std::vector<std::shared_ptr<Bo>>& listed) const;
    // fake_syncobjs.cpp: DRM_IOCTL_AMDGPU_CTX and DRM_IOCTL_SYNCOBJ_*.
    int ctxIoctl(File& file, void* arg);
    int syncobjIoctl(File& file, unsigned long request, void* arg);
    bool signaled(const Fence& fence) const;
    /// The fence a syncobj has at `point`, as drm_syncobj_find_fence returns it (-EINVAL: none).
    int fenceAt(const Syncobj& syncobj, uint64_t point, Fence* out) const;
    int syncobjHandleToFd(File& file, void* arg);
    int syncobjFdToHandle(File& file, void* arg);
    int syncobjWait(File& file, unsigned long request, void* arg);
    int syncobjArrayOp(File& file, unsigned long request, void* arg);
    int syncobjTransfer(File& file, void* arg);
    // fake_sync_files.cpp: sync files, from and into syncobjs, and their own ioctls.
    int exportSyncFile(File& file, uint32_t handle, uint64_t point);
    int importSyncFile(File& file, int fd, uint32_t handle, uint64_t point);
    int syncFileIoctl(const SyncFile& syncFile, unsigned long request, void* arg);
    int syncFileMerge(const SyncFile& syncFile, void* arg);
    int syncFileInfo(const SyncFile& syncFile, void* arg) const;
    /// Moves the bytes of `bo` into shared pages (its first export); an errno on failure.
    int sharePages(const std::shared_ptr<Bo>& bo);
    /// The BO a dma-buf fd exports: one this fake handed out, or a real fd of a dma-buf another
    /// process exported (received over a socket, or from criu's fdstore), taken over here.
    std::shared_ptr<Bo> dmabufOf(int fd);
    std::shared_ptr<Bo> adoptDmabuf(int fd);
    std::vector<std::weak_ptr<Bo>> exported_; ///< BOs with shared pages
    /// The kernel serves threads at once (the backend's lanes copy on threads of their own).
    std::recursive_mutex mu_;
    bool shouldFail(unsigned long request, int* err);

    const topology::sysfs::Dir* files_ = &topology::sysfs::realFileSystem();
    BoPlacement* placement_ = nullptr;
    int boList(File& file, void* arg);
    std::map<unsigned, Gpu> gpus_;
    std::map<int, FdObj> fds_;
    int nextFd_ = 1000;
    uint64_t nextBoId_ = 1;
    uint64_t nextClient_ = 1;
    std::map<std::pair<int, int>, std::shared_ptr<File>> processFds_;
    std::vector<std::weak_ptr<Bo>> busyBos_;
    int waitIdle(File& file, void* arg);
    void advanceClock(uint64_t to);
    std::map<unsigned long, std::pair<int, int>> failures_; ///< request -> (countdown, errno)
    fakesdma::FakeLibdrm libdrm_{*this, kLibdrmVaBase};
};

} // namespace fakedrm
