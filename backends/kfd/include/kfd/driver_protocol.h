#pragma once
/// \file
/// What a client (the preloaded interposer of tests/kfd/driver, the KFD backend's DriverKernel)
/// and the user-space KFD driver (tests/kfd/driver/driver_server.cpp) say to each other over
/// ROOT/driver.sock: one length-prefixed frame per request and per reply, in the byte order of the
/// machine. An ioctl's struct travels whole, with the user buffers its pointer fields name
/// (driverIoctlBuffers): the client copies them in and back out as the kernel's
/// copy_from_user/copy_to_user would; the driver points the fields at its own copies while it
/// serves the call.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kfddriver {

/// The requests a client makes.
enum class Op : uint32_t {
    Open = 1,       ///< open(path): a file of the driver; answers its id and the node to open
    Ioctl = 2,      ///< ioctl on a file
    Mapping = 3,    ///< mmap of a file at an offset: answers where in the shared memory it is
    Fstat = 4,      ///< fstat of a file as the kernel's device would answer it
    ListBos = 5,    ///< the BOs of a KFD process (tests, and the plugin's view of a process)
    ListQueues = 6, ///< the queues of a KFD process
    ListEvents = 7, ///< the events of a KFD process; `a` of the answer: its event page's handle
    Stat = 8,       ///< stat(path) of a device path, as the machine's /dev would answer it
    Libdrm = 9,     ///< a libdrm_amdgpu call (LibdrmCall in `a`) run by the driver's SDMA engine
};

/// An Op::Ioctl whose `b` is kDrmUserIoctl is a DRM ioctl of a render node carrying only its
/// struct: the driver copies the user buffers it points at in from the caller's memory and back
/// out, as the kernel's copy_from_user and copy_to_user do (the preloaded interposer's and the
/// amdgpu-drm backend's on the driver). Other Op::Ioctl requests carry their buffers.
inline constexpr uint64_t kDrmUserIoctl = 0x4452'4d55'5345'5231ull; // "DRMUSER1"

/// The libdrm_amdgpu calls of an SDMA copy (sdma::Libdrm) that Op::Libdrm carries: the
/// arguments and results are numbers (`numbers` below); fds are file ids of the driver. The
/// memory of a userptr BO is a memfd the client sends with the call (SCM_RIGHTS) and maps where
/// the caller's memory was, so that the driver's engine and the caller share it; a GTT BO (the
/// engine's command buffers) is the driver's, the client writing what the CPU would into a copy
/// of its own, whose IB goes with SubmitSdma.
enum class LibdrmCall : uint32_t {
    OpenRenderNode = 1, ///< text: the path; result: a file id of the driver
    CloseRenderNode,    ///< (file id)
    DeviceInitialize,   ///< (file id) -> (device)
    DeviceDeinitialize, ///< (device)
    BoImportDmabuf,     ///< (device, dmabuf file id) -> (bo, size)
    BoFromUserMem,      ///< (device, size) + memfd -> (bo)
    BoAllocGtt,         ///< (device, size) -> (bo)
    BoFree,             ///< (bo)
    VaRangeAlloc,       ///< (device, size, alignment) -> (va, range)
    VaRangeFree,        ///< (range)
    BoVaOp,             ///< (bo, size, va, map)
    CtxCreate,          ///< (device) -> (ctx)
    CtxFree,            ///< (ctx)
    BoListCreate,       ///< (device, bo...) -> (list)
    BoListDestroy,      ///< (list)
    SubmitSdma,         ///< (ctx, list, ibVa, ibDwords[, gtt bo, offset]) -> (seq); the IB's
                        ///< bytes, written at that offset of the GTT BO first, in buffers[0]
    WaitFence,          ///< (ctx, seq, timeoutNs) -> (signaled)
};

/// Numbers as Op::Libdrm carries them in `text`, and back (false on a malformed string).
std::string encodeNumbers(const std::vector<uint64_t>& numbers);
bool decodeNumbers(const std::string& bytes, std::vector<uint64_t>* numbers);

/// One request or reply: a few numbers, a byte string, and buffers.
struct Message {
    uint32_t op = 0;
    int32_t pid = 0;       ///< replies: the result, 0 or -errno; requests: the caller, which the
                           ///< driver takes from the connection instead (SO_PEERCRED)
    int64_t file = -1;     ///< the driver's id of the file the call is on
    uint64_t a = 0, b = 0; ///< request, offset, length... per op
    std::string text;      ///< a path, a struct, a node path...
    std::vector<std::string> buffers;
};

/// The bytes of `m`, and back. decode is false on a malformed frame.
std::string encode(const Message& m);
bool decode(const std::string& bytes, Message* m);

/// Sends one frame on a stream socket, with fd `passFd` (SCM_RIGHTS) when it is >= 0: 0 or
/// -errno.
int sendFrame(int sock, const std::string& bytes, int passFd = -1);
/// Receives one frame: 0, -errno, or -ECONNRESET at the end of the stream. An fd sent with it
/// goes to *passedFd when given (-1 when none came), else is closed.
int receiveFrame(int sock, std::string* bytes, int* passedFd = nullptr);

/// A connection to the driver at `root`: a socket fd, or -errno (the reason in *error).
int connectDriver(const std::string& root, std::string* error);
/// Sends `request` on `sock` (with `passFd` when >= 0) and waits for the answer: 0 or -errno.
int exchange(int sock, const Message& request, Message* answer, int passFd = -1);

/// A user buffer an ioctl's struct points at: the pointer field's offset in the struct, and its
/// length in bytes as the struct's other fields give it.
struct IoctlBuffer {
    size_t pointerField = 0;
    uint64_t length = 0;
};

/// The user buffers of ioctl `request` with struct `arg` (the commands the fake serves whose
/// kernel function copies user memory; none for the others). A pointer field the caller's struct
/// is too short to hold is left out.
std::vector<IoctlBuffer> driverIoctlBuffers(unsigned long request, const void* arg, size_t size);

/// The offsets of the struct fields of ioctl `request` that hold an fd of the caller (the kernel
/// resolves them in the caller's fd table): the client replaces each with the driver's file id.
std::vector<size_t> driverIoctlFdFields(unsigned long request, size_t size);

/// An ioctl a client makes on file `file` of the driver, as the kernel would run it on the
/// caller's memory: the struct at `arg` and the user buffers it points at (driverIoctlBuffers) go
/// to the driver through `call` (false: the driver cannot be reached), its fd fields
/// (driverIoctlFdFields) as the file ids `fileOfFd` gives (-1: not a file of the driver), and
/// what the driver answers is copied back as copy_to_user would, the caller's own pointers and
/// fds left as they were. The ioctl's result, or -errno (-EIO when the driver is lost).
int clientIoctl(int64_t file, unsigned long request, void* arg,
                const std::function<int64_t(int fd)>& fileOfFd,
                const std::function<bool(const Message& request, Message* answer)>& call);

/// A DRM ioctl a client makes on render-node file `file` of the driver at `root`, its struct
/// alone (kDrmUserIoctl: the driver reads and writes the user buffers it points at in the
/// caller's memory), sent through `call` (false: the driver cannot be reached) and copied back as
/// the kernel leaves it. The fds of PRIME are the caller's, as the kernel's: PRIME_FD_TO_HANDLE
/// sends the driver the file id of its dma-buf fd (-1 for an open fd not of the driver, -EBADF
/// for none), PRIME_HANDLE_TO_FD opens the dma-buf's node (dmabufNodePath) the driver answers,
/// read-write when its file is (the answer's `a`), close-on-exec when DRM_CLOEXEC is asked, and
/// gives that fd. Fence files likewise: SYNCOBJ_FD_TO_HANDLE and SYNC_IOC_MERGE send the file id
/// of the fd they are given (-1: not one of the driver's), SYNCOBJ_HANDLE_TO_FD and
/// SYNC_IOC_MERGE open the node of the file the driver made (fenceFileNodePath; read-only and
/// close-on-exec, as drm_syncobj_get_fd and sync_file_fdget's callers install it); a sync
/// file's own ioctls (type SYNC_IOC_MAGIC) go through here too. The ioctl's result, or -errno
/// (-EFAULT: a struct but no pointer; -EIO when the driver is lost).
int drmUserIoctl(const std::string& root, int64_t file, unsigned long request, void* arg,
                 const std::function<bool(const Message& request, Message* answer)>& call);

/// Whether `path` (a /proc fd link) is a dma-buf's node of the driver at `root`
/// (dmabufNodePath: ROOT/files/ID/dmabuf, `root` canonical).
bool isDmabufNode(const std::string& root, const std::string& path);

/// A BO as ListBos reports it.
struct BoInfo {
    static constexpr uint64_t kNoMemory = ~0ull;
    uint64_t addr = 0, size = 0, mmapOffset = 0;
    uint64_t memoryOffset = kNoMemory; ///< where its bytes lie in the machine's memory
    uint32_t gpuId = 0, flags = 0;
};
std::string encodeBos(const std::vector<BoInfo>& bos);
bool decodeBos(const std::string& bytes, std::vector<BoInfo>* bos);

/// A queue as ListQueues reports it.
struct QueueInfo {
    static constexpr uint64_t kNoMemory = BoInfo::kNoMemory;
    uint64_t ringBase = 0, ringSize = 0, writePtr = 0, readPtr = 0;
    uint64_t doorbellMemoryOffset = kNoMemory; ///< its doorbell in the machine's memory, once
                                               ///< the process mapped its doorbell page
    uint32_t id = 0, gpuId = 0, type = 0, doorbellIndex = 0;
};
std::string encodeQueues(const std::vector<QueueInfo>& queues);
bool decodeQueues(const std::string& bytes, std::vector<QueueInfo>* queues);

/// An event as ListEvents reports it.
struct EventInfo {
    uint32_t id = 0, type = 0, autoReset = 0, signaled = 0;
};
std::string encodeEvents(const std::vector<EventInfo>& events);
bool decodeEvents(const std::string& bytes, std::vector<EventInfo>* events);

/// A node of the machine's memory the driver makes for each dmabuf fd the CRIU ops CHECKPOINT
/// and RESTORE answer (ROOT/files/ID/dmabuf): a client opens it to hold a real fd of the BO.
inline std::string dmabufNodePath(const std::string& root, int64_t file) {
    return root + "/files/" + std::to_string(file) + "/dmabuf";
}

/// The nodes of the driver's fence files: a syncobj's fd (SYNCOBJ_HANDLE_TO_FD) and a sync file
/// (SYNCOBJ_HANDLE_TO_FD with EXPORT_SYNC_FILE, SYNC_IOC_MERGE), ROOT/files/ID/NAME, nodes of the
/// machine's memory as a dma-buf's are, which the client opens to hold a real fd of the file.
inline constexpr char kSyncobjNodeName[] = "syncobj";
inline constexpr char kSyncFileNodeName[] = "sync_file";
inline std::string fenceFileNodePath(const std::string& root, int64_t file, const char* name) {
    return root + "/files/" + std::to_string(file) + "/" + name;
}

/// The driver's id of the file that fd `fd` of process `pid` (0: this process) is an fd of, as
/// its /proc link names it (ROOT/files/ID/NAME, `root` canonical), or -1 when not one of the
/// driver's.
int64_t fileOfFd(const std::string& root, int pid, int fd);

/// The path the /proc link of fd `fd` of process `pid` (0: this process) names, or "" when it
/// cannot be read.
std::string linkOfFd(int pid, int fd);

/// The device path a node of the driver's file stands for: /dev/kfd for ROOT/files/ID/kfd,
/// /dev/dri/renderD<N> for ROOT/files/ID/renderD<N>; "" for any other path (a dmabuf node).
std::string devicePathOfNode(const std::string& node);

/// Whether a file the kernel stats as `st` is a block node of the memory of the machine at
/// `root` (the loop device ROOT/memory.node is a node of), wherever it lies: the nodes a private
/// mount namespace puts at /dev/kfd and /dev/dri/renderD<N> so that the mappings of the
/// machine's devices are named by their /dev paths, as on a ROCm machine
/// (tests/e2e/kfd_driver_lib.sh, with_device_paths).
bool isMachineMemory(const std::string& root, const struct stat& st);

/// The socket of the driver at `root`.
inline std::string socketPath(const std::string& root) {
    return root + "/driver.sock";
}
/// The KFD topology tree of the driver at `root` (what /sys/devices/virtual/kfd/kfd/topology
/// shows).
inline std::string sysfsPath(const std::string& root) {
    return root + "/sysfs";
}
/// A block node of the machine's memory (the loop device), for processes that attach to the
/// machine without a file of the driver (a plugin inside criu, a test).
inline std::string memoryNodePath(const std::string& root) {
    return root + "/memory.node";
}
/// The directory of the nodes of the driver's open files.
inline std::string filesPath(const std::string& root) {
    return root + "/files";
}

} // namespace kfddriver
