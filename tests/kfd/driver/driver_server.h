#pragma once
/// \file
/// The user-space KFD driver: one process that holds a machine's kernel state (the fake KFD of
/// ../fake_kfd.h, whose ioctls keep the kernel's rules) and serves the processes of the machine
/// over ROOT/driver.sock, with the machine's memory in a loop device (loop_memory.h).
///
///   ROOT/driver.sock         the driver's socket (driver_protocol.h)
///   ROOT/sysfs               the KFD topology tree the machine shows
///   ROOT/memory              the sparse file behind the loop device: every BO and kfd page
///   ROOT/memory.node         a block node of the loop device (driver_protocol.h)
///   ROOT/files/ID/NAME       per open file of the driver, a block node of the loop device named
///                            kfd or renderD<minor>: the fd a process holds is an fd of it
///   ROOT/faults              written by a test, read (and removed) by the driver before the next
///                            request: calls of the fake to fail, one a line, "NAME ERRNO [NTH]"
///                            (FakeKernel::failCall's names, ERRNO by name: EIO; drm:NAME a
///                            render-node ioctl of any process, kRenderFaultPrefix), applied at
///                            once; ERRNO STALL holds the NTH next call NAME unanswered instead
///                            (names: ioctl:PROCESS_INFO, CHECKPOINT, UNPAUSE, RESTORE, RESUME,
///                            submitSdma, boImportDmabuf), writing ROOT/stalled (the name): the
///                            driver serves the others, and drops the call when its caller dies
///   ROOT/drm-sysfs           what /sys/dev/char shows of the render nodes (render_node_service.h)
///
/// A task that has exited on the host loses its files and its KFD process (the driver looks every
/// 200 ms), as the kernel closes a dead task's files.
///
/// The caller of each request, the kernel's `current`, is the process that connected
/// (SO_PEERCRED): a process forked with a connection makes one of its own (the interposer does).

#include "fake_kfd.h"
#include "kfd/driver_protocol.h"
#include "loop_memory.h"
#include "render_node_service.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kfddriver {

/// A machine served by the driver.
struct MachineSpec {
    unsigned gpus = 1;
    uint32_t gpuIdBase = 0x1000;
    uint64_t memoryBytes = 1ull << 39; ///< the sparse memory file's size
    /// Render minors absent from the machine's /dev and refused by its devices cgroup (a
    /// container given the other GPUs; sysfs still lists them).
    std::vector<int> hiddenRenderMinors;
    /// A machine of render nodes only (a kernel or container without /dev/kfd): opening or
    /// stat-ing /dev/kfd answers ENOENT, as there.
    bool noKfd = false;
};

/// The lines of a ROOT/faults file, each (NAME, errno, NTH); false and *error naming the line
/// when one is not "NAME ERRNO [NTH]" with a known errno name and NTH >= 1.
/// A ROOT/faults name "drm:NAME" fails the render-node ioctl NAME (servedDrmRequestNamed) of any
/// process; every other name is the KFD fake's failCall.
inline constexpr const char* kRenderFaultPrefix = "drm:";
struct InjectedFault {
    std::string name;
    int err = 0; ///< kStall: held unanswered
    int nth = 1;
    static constexpr int kStall = -1;
};
/// The name a stall of ROOT/faults gives `request` ("" when none can hold it).
std::string stallName(const Message& request);
bool parseFaults(const std::string& text, std::vector<InjectedFault>* out, std::string* error);

class DriverServer {
public:
    /// Sets up the machine under `root` (an existing directory). On failure, *error says why.
    DriverServer(const std::string& root, const MachineSpec& spec, std::string* error);
    ~DriverServer();
    DriverServer(const DriverServer&) = delete;
    DriverServer& operator=(const DriverServer&) = delete;

    /// Serves requests until `*stop` becomes true (checked at least every 200 ms).
    void serve(const volatile int* stop);

    /// Applies ROOT/faults if a test wrote one, and removes it: 0, or -EINVAL when it does not
    /// parse (said on stderr; nothing of it applied).
    int applyFaultsFile();
    /// Reaps the tasks that exited on the host (FakeKernel::reapTask).
    void reapExitedTasks();
    /// Whether `request` is the call a stall of ROOT/faults holds (then ROOT/stalled is written).
    bool stalls(const Message& request);

    /// The index of the machine's loop device.
    int loopIndex() const { return memory_ ? memory_->index() : -1; }

    /// One request of process `request.pid`, answered (the socket plumbing aside): for tests.
    /// `passedFd`: an fd that came with it (SCM_RIGHTS), which this call closes.
    Message handle(const Message& request, int passedFd = -1);

private:
    Message open(const Message& request);
    Message ioctl(const Message& request);
    Message mapping(const Message& request);
    Message fstat(const Message& request);
    Message stat(const Message& request);
    /// Op::Libdrm: a call of the fake's libdrm (the SDMA engine), with the memfd of a userptr
    /// or GTT BO's memory as `memfd`.
    Message libdrm(const Message& request, int memfd);
    /// Makes the node of each dmabuf fd the answer of a CRIU op holds (dmabufNodePath):
    /// 0 or -errno.
    int makeDmabufNodes(const Message& request, const std::vector<std::string>& buffers);
    /// ListBos, ListQueues, ListEvents of the process `request.a`.
    Message describeProcess(const Message& request);
    std::vector<BoInfo> bosOf(const fakekfd::FakeProcess& p) const;
    std::vector<QueueInfo> queuesOf(const fakekfd::FakeProcess& p) const;
    /// Where `region` lies in the machine's memory, or BoInfo::kNoMemory outside it.
    uint64_t memoryOffsetOf(const fakekfd::MemoryRegion& region) const;

    std::string root_;
    bool noKfd_ = false;
    std::shared_ptr<LoopMemory> memory_;
    std::shared_ptr<fakekfd::FakeKernel> kernel_;
    std::unique_ptr<RenderNodeService> render_; ///< the DRM ioctls of render nodes
    int listener_ = -1;
    /// The memory a client shared for a userptr or GTT BO of the fake's libdrm, by its BO.
    std::map<uint64_t, std::pair<void*, uint64_t>> sharedMemory_;
    /// A stall ROOT/faults asked for and not reached yet (nth = 0: none).
    InjectedFault stall_{"", 0, 0};
};

} // namespace kfddriver
