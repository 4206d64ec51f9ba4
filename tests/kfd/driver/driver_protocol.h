#pragma once
/// \file
/// What a client (the preloaded interposer, later the KFD backend's KernelInterface) and the
/// user-space KFD driver (kfd_driver_server.cpp) say to each other over ROOT/driver.sock: one
/// length-prefixed frame per request and per reply, in the byte order of the machine. An ioctl's
/// struct travels whole, with the user buffers its pointer fields name (driverIoctlBuffers): the
/// client copies them in and back out as the kernel's copy_from_user/copy_to_user would; the
/// driver points the fields at its own copies while it serves the call.

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
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
};

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

/// Sends one frame on a stream socket: 0 or -errno.
int sendFrame(int sock, const std::string& bytes);
/// Receives one frame: 0, -errno, or -ECONNRESET at the end of the stream.
int receiveFrame(int sock, std::string* bytes);

/// A connection to the driver at `root`: a socket fd, or -errno (the reason in *error).
int connectDriver(const std::string& root, std::string* error);
/// Sends `request` on `sock` and waits for the answer: 0 or -errno.
int exchange(int sock, const Message& request, Message* answer);

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
