#include "kfd/driver_protocol.h"

#include "gem/list_handles.h"

#include <fcntl.h>
#include <libdrm/drm.h>
#include <linux/kfd_ioctl.h>
#include <linux/sync_file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>

namespace kfddriver {

namespace {

void put(std::string& out, const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
}
template <typename T> void putValue(std::string& out, T v) {
    put(out, &v, sizeof(v));
}
void putBytes(std::string& out, const std::string& s) {
    putValue<uint64_t>(out, s.size());
    out += s;
}

struct Reader {
    const std::string& in;
    size_t at = 0;
    template <typename T> bool value(T* v) {
        if (in.size() - at < sizeof(T))
            return false;
        memcpy(v, in.data() + at, sizeof(T));
        at += sizeof(T);
        return true;
    }
    bool bytes(std::string* s) {
        uint64_t n = 0;
        if (!value(&n) || in.size() - at < n)
            return false;
        s->assign(in, at, n);
        at += n;
        return true;
    }
};

uint64_t fieldU32(const void* arg, size_t offset) {
    uint32_t v = 0;
    memcpy(&v, static_cast<const char*>(arg) + offset, sizeof(v));
    return v;
}
uint64_t fieldU64(const void* arg, size_t offset) {
    uint64_t v = 0;
    memcpy(&v, static_cast<const char*>(arg) + offset, sizeof(v));
    return v;
}

int ioFully(int sock, char* p, size_t n, bool sending) {
    while (n > 0) {
        ssize_t r = sending ? send(sock, p, n, MSG_NOSIGNAL) : recv(sock, p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -ECONNRESET;
        p += r;
        n -= static_cast<size_t>(r);
    }
    return 0;
}

} // namespace

std::string encode(const Message& m) {
    std::string out;
    putValue(out, m.op);
    putValue(out, m.pid);
    putValue(out, m.file);
    putValue(out, m.a);
    putValue(out, m.b);
    putBytes(out, m.text);
    putValue<uint64_t>(out, m.buffers.size());
    for (const std::string& b : m.buffers)
        putBytes(out, b);
    return out;
}

bool decode(const std::string& bytes, Message* m) {
    Reader r{bytes};
    uint64_t n = 0;
    if (!r.value(&m->op) || !r.value(&m->pid) || !r.value(&m->file) || !r.value(&m->a) ||
        !r.value(&m->b) || !r.bytes(&m->text) || !r.value(&n) || n > bytes.size())
        return false;
    m->buffers.assign(n, std::string());
    for (std::string& b : m->buffers)
        if (!r.bytes(&b))
            return false;
    return r.at == bytes.size();
}

namespace {

/// The frame's length, with `passFd` (SCM_RIGHTS) when >= 0: 0 or -errno.
int sendLength(int sock, uint64_t n, int passFd) {
    if (passFd < 0)
        return ioFully(sock, reinterpret_cast<char*>(&n), sizeof(n), true);
    iovec iov{&n, sizeof(n)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &passFd, sizeof(int));
    ssize_t r;
    do {
        r = sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    // The fd went with the first byte; the rest of the length follows plainly.
    return ioFully(sock, reinterpret_cast<char*>(&n) + r, sizeof(n) - static_cast<size_t>(r), true);
}

/// The frame's length and any fd sent with it: 0 or -errno.
int receiveLength(int sock, uint64_t* n, int* passedFd) {
    *passedFd = -1;
    iovec iov{n, sizeof(*n)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t r;
    do {
        r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return -errno;
    if (r == 0)
        return -ECONNRESET;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(passedFd, CMSG_DATA(c), sizeof(int));
    return ioFully(sock, reinterpret_cast<char*>(n) + r, sizeof(*n) - static_cast<size_t>(r),
                   false);
}

} // namespace

int sendFrame(int sock, const std::string& bytes, int passFd) {
    if (int r = sendLength(sock, bytes.size(), passFd); r < 0)
        return r;
    return ioFully(sock, const_cast<char*>(bytes.data()), bytes.size(), true);
}

int receiveFrame(int sock, std::string* bytes, int* passedFd) {
    uint64_t n = 0;
    int fd = -1;
    int r = receiveLength(sock, &n, &fd);
    if (passedFd)
        *passedFd = fd;
    else if (fd >= 0)
        close(fd);
    if (r < 0)
        return r;
    constexpr uint64_t kMaxFrame = 1ull << 30;
    if (n > kMaxFrame)
        return -EMSGSIZE;
    bytes->assign(n, '\0');
    return ioFully(sock, bytes->data(), n, false);
}

int connectDriver(const std::string& root, std::string* error) {
    std::string path = socketPath(root);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) {
        *error = "the driver's socket path " + path + " is too long for a unix socket";
        return -ENAMETOOLONG;
    }
    memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0 || connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
        int e = errno;
        *error = "cannot reach the driver at " + path + ": " + strerror(e);
        if (sock >= 0)
            close(sock);
        return -e;
    }
    return sock;
}

std::string linkOfFd(int pid, int fd) {
    if (fd < 0)
        return "";
    char link[PATH_MAX];
    std::string proc =
        "/proc/" + (pid ? std::to_string(pid) : std::string("self")) + "/fd/" + std::to_string(fd);
    ssize_t n = readlink(proc.c_str(), link, sizeof(link) - 1);
    return n > 0 ? std::string(link, static_cast<size_t>(n)) : std::string();
}

int64_t fileOfFd(const std::string& root, int pid, int fd) {
    std::string link = linkOfFd(pid, fd);
    std::string prefix = filesPath(root) + "/";
    if (link.compare(0, prefix.size(), prefix) != 0)
        return -1;
    char* end = nullptr;
    long long id = strtoll(link.c_str() + prefix.size(), &end, 10);
    return end && *end == '/' && id >= 0 ? id : -1;
}

std::string devicePathOfNode(const std::string& node) {
    std::string name = node.substr(node.rfind('/') + 1);
    if (name == "kfd")
        return "/dev/kfd";
    if (name.rfind("renderD", 0) == 0 && name.size() > strlen("renderD"))
        return "/dev/dri/" + name;
    return "";
}

bool isMachineMemory(const std::string& root, const struct stat& st) {
    struct stat memory {};
    return S_ISBLK(st.st_mode) && ::stat(memoryNodePath(root).c_str(), &memory) == 0 &&
           S_ISBLK(memory.st_mode) && memory.st_rdev == st.st_rdev;
}

int exchange(int sock, const Message& request, Message* answer, int passFd) {
    std::string bytes;
    if (int r = sendFrame(sock, encode(request), passFd); r < 0)
        return r;
    if (int r = receiveFrame(sock, &bytes); r < 0)
        return r;
    return decode(bytes, answer) ? 0 : -EPROTO;
}

std::vector<IoctlBuffer> driverIoctlBuffers(unsigned long request, const void* arg, size_t size) {
    std::vector<IoctlBuffer> out;
    auto add = [&](size_t pointerField, uint64_t length) {
        if (pointerField + sizeof(uint64_t) <= size && fieldU64(arg, pointerField) && length)
            out.push_back({pointerField, length});
    };
    auto fits = [&](size_t offset) { return offset + sizeof(uint32_t) <= size; };
    if (request == DRM_IOCTL_VERSION) { // drm_copy_field: each string up to its length
        using A = drm_version;
        if (size >= sizeof(A)) {
            add(offsetof(A, name), fieldU64(arg, offsetof(A, name_len)));
            add(offsetof(A, date), fieldU64(arg, offsetof(A, date_len)));
            add(offsetof(A, desc), fieldU64(arg, offsetof(A, desc_len)));
        }
        return out;
    }
    if (request == gem::kIoctlGemListHandles) {
        using A = gem::GemListHandles;
        if (fits(offsetof(A, numEntries)))
            add(offsetof(A, entries),
                fieldU32(arg, offsetof(A, numEntries)) * sizeof(gem::GemListHandlesEntry));
        return out;
    }
    if (_IOC_TYPE(request) != AMDKFD_IOCTL_BASE)
        return out;
    switch (_IOC_NR(request)) {
    case _IOC_NR(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW): {
        using A = kfd_ioctl_get_process_apertures_new_args;
        if (fits(offsetof(A, num_of_nodes)))
            add(offsetof(A, kfd_process_device_apertures_ptr),
                fieldU32(arg, offsetof(A, num_of_nodes)) * sizeof(kfd_process_device_apertures));
        break;
    }
    case _IOC_NR(AMDKFD_IOC_MAP_MEMORY_TO_GPU):
    case _IOC_NR(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU): {
        using A = kfd_ioctl_map_memory_to_gpu_args;
        if (fits(offsetof(A, n_devices)))
            add(offsetof(A, device_ids_array_ptr),
                fieldU32(arg, offsetof(A, n_devices)) * sizeof(uint32_t));
        break;
    }
    case _IOC_NR(AMDKFD_IOC_WAIT_EVENTS): {
        using A = kfd_ioctl_wait_events_args;
        if (fits(offsetof(A, num_events)))
            add(offsetof(A, events_ptr),
                fieldU32(arg, offsetof(A, num_events)) * sizeof(kfd_event_data));
        break;
    }
    case _IOC_NR(AMDKFD_IOC_CRIU_OP): {
        using A = kfd_ioctl_criu_args;
        if (!fits(offsetof(A, num_bos)))
            break;
        add(offsetof(A, devices),
            fieldU32(arg, offsetof(A, num_devices)) * sizeof(kfd_criu_device_bucket));
        add(offsetof(A, bos), fieldU32(arg, offsetof(A, num_bos)) * sizeof(kfd_criu_bo_bucket));
        add(offsetof(A, priv_data), fieldU64(arg, offsetof(A, priv_data_size)));
        break;
    }
    default:
        break;
    }
    return out;
}

std::vector<size_t> driverIoctlFdFields(unsigned long request, size_t size) {
    if (_IOC_TYPE(request) == AMDKFD_IOCTL_BASE &&
        _IOC_NR(request) == _IOC_NR(AMDKFD_IOC_ACQUIRE_VM) &&
        offsetof(kfd_ioctl_acquire_vm_args, drm_fd) + sizeof(uint32_t) <= size)
        return {offsetof(kfd_ioctl_acquire_vm_args, drm_fd)};
    return {};
}

namespace {

/// PRIME_HANDLE_TO_FD or PRIME_FD_TO_HANDLE with a struct of their size (drm_ioctl finds an ioctl
/// by its number).
bool isPrime(unsigned long request, unsigned long prime) {
    return _IOC_TYPE(request) == DRM_IOCTL_BASE && _IOC_NR(request) == _IOC_NR(prime) &&
           _IOC_SIZE(request) == sizeof(drm_prime_handle);
}

/// Where a fence-file ioctl carries an fd in its struct (an s32): one the caller gives, one the
/// kernel installs (and the node the installed file is).
struct FenceFileFds {
    std::optional<size_t> given;
    std::optional<size_t> installed;
    const char* node = nullptr;
};

FenceFileFds fenceFileFds(unsigned long request, const void* arg) {
    FenceFileFds fds;
    bool syncobjHandle =
        _IOC_TYPE(request) == DRM_IOCTL_BASE && _IOC_SIZE(request) >= sizeof(drm_syncobj_handle);
    if (syncobjHandle && _IOC_NR(request) == _IOC_NR(DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE)) {
        fds.given = offsetof(drm_syncobj_handle, fd);
    } else if (syncobjHandle && _IOC_NR(request) == _IOC_NR(DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD)) {
        drm_syncobj_handle h{};
        memcpy(&h, arg, sizeof(h));
        fds.installed = offsetof(drm_syncobj_handle, fd);
        fds.node = (h.flags & DRM_SYNCOBJ_HANDLE_TO_FD_FLAGS_EXPORT_SYNC_FILE) ? kSyncFileNodeName
                                                                               : kSyncobjNodeName;
    } else if (request == SYNC_IOC_MERGE) {
        fds.given = offsetof(sync_merge_data, fd2);
        fds.installed = offsetof(sync_merge_data, fence);
        fds.node = kSyncFileNodeName;
    }
    return fds;
}

} // namespace

bool isDmabufNode(const std::string& root, const std::string& path) {
    std::string prefix = filesPath(root) + "/";
    size_t slash = path.find('/', prefix.size());
    return path.compare(0, prefix.size(), prefix) == 0 && slash != std::string::npos &&
           slash > prefix.size() && path.find_first_not_of("0123456789", prefix.size()) == slash &&
           path.compare(slash, std::string::npos, "/dmabuf") == 0;
}

int drmUserIoctl(const std::string& root, int64_t file, unsigned long request, void* arg,
                 const std::function<bool(const Message& request, Message* answer)>& call) {
    size_t size = _IOC_SIZE(request);
    if (size && !arg)
        return -EFAULT;
    Message m, answer;
    m.op = static_cast<uint32_t>(Op::Ioctl);
    m.file = file;
    m.a = request;
    m.b = kDrmUserIoctl;
    m.text.assign(static_cast<const char*>(arg), size);
    auto* prime = static_cast<drm_prime_handle*>(arg);
    bool import = isPrime(request, DRM_IOCTL_PRIME_FD_TO_HANDLE);
    if (import) {
        // dma_buf_get resolves the fd in the caller's table: the driver gets its file id.
        int64_t id = fileOfFd(root, 0, prime->fd);
        if (id < 0 && fcntl(prime->fd, F_GETFD) < 0)
            return -EBADF;
        drm_prime_handle sent = *prime;
        sent.fd = id < 0 || id > INT32_MAX ? -1 : static_cast<int32_t>(id);
        m.text.assign(reinterpret_cast<const char*>(&sent), sizeof(sent));
    }
    // A fence file's fd the caller gives: the driver gets its file id (-1: not the driver's).
    FenceFileFds fenceFds = fenceFileFds(request, arg);
    int32_t givenFd = -1;
    if (fenceFds.given) {
        memcpy(&givenFd, static_cast<const char*>(arg) + *fenceFds.given, sizeof(givenFd));
        int64_t id = fileOfFd(root, 0, givenFd);
        int32_t sent = id < 0 || id > INT32_MAX ? -1 : static_cast<int32_t>(id);
        memcpy(m.text.data() + *fenceFds.given, &sent, sizeof(sent));
    }
    if (!call(m, &answer))
        return -EIO;
    int32_t callerFd = import ? prime->fd : -1;
    if (size && answer.text.size() == size) // the driver answers the struct when it goes out
        memcpy(arg, answer.text.data(), size);
    if (import)
        prime->fd = callerFd;
    if (answer.pid == 0 && isPrime(request, DRM_IOCTL_PRIME_HANDLE_TO_FD)) {
        // dma_buf_fd: an fd of the dma-buf's one file in the caller's table.
        int flags = (answer.a ? O_RDWR : O_RDONLY) | (prime->flags & DRM_CLOEXEC ? O_CLOEXEC : 0);
        int fd = ::open(dmabufNodePath(root, prime->fd).c_str(), flags);
        if (fd < 0)
            return -errno;
        prime->fd = fd;
    }
    if (fenceFds.given)
        memcpy(static_cast<char*>(arg) + *fenceFds.given, &givenFd, sizeof(givenFd));
    if (answer.pid == 0 && fenceFds.installed) {
        // drm_syncobj_get_fd, sync_file's fd_install: an fd of the new file, O_CLOEXEC always.
        int32_t id = -1;
        memcpy(&id, static_cast<const char*>(arg) + *fenceFds.installed, sizeof(id));
        int fd = ::open(fenceFileNodePath(root, id, fenceFds.node).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        memcpy(static_cast<char*>(arg) + *fenceFds.installed, &fd, sizeof(fd));
    }
    return static_cast<int>(answer.pid);
}

int clientIoctl(int64_t file, unsigned long request, void* arg,
                const std::function<int64_t(int fd)>& fileOfFd,
                const std::function<bool(const Message& request, Message* answer)>& call) {
    size_t size = arg ? _IOC_SIZE(request) : 0;
    Message m, answer;
    m.op = static_cast<uint32_t>(Op::Ioctl);
    m.file = file;
    m.a = request;
    if (size)
        m.text.assign(static_cast<const char*>(arg), size);
    auto fdFields = driverIoctlFdFields(request, size);
    for (size_t field : fdFields) {
        int32_t fd = 0;
        memcpy(&fd, m.text.data() + field, sizeof(fd));
        auto id = static_cast<int32_t>(fileOfFd(fd));
        memcpy(m.text.data() + field, &id, sizeof(id)); // -1: not a file of the driver (EBADF)
    }
    auto buffers = driverIoctlBuffers(request, arg, size);
    for (const auto& b : buffers)
        m.buffers.emplace_back(
            reinterpret_cast<const char*>(static_cast<uintptr_t>(fieldU64(arg, b.pointerField))),
            b.length);
    if (!call(m, &answer))
        return -EIO;
    if ((_IOC_DIR(request) & _IOC_READ) && answer.text.size() == size) {
        std::string mine(static_cast<const char*>(arg), size);
        memcpy(arg, answer.text.data(), size);
        // The caller's own pointers and fds stay as they were.
        for (const auto& b : buffers)
            memcpy(static_cast<char*>(arg) + b.pointerField, mine.data() + b.pointerField, 8);
        for (size_t field : fdFields)
            memcpy(static_cast<char*>(arg) + field, mine.data() + field, 4);
    }
    for (size_t i = 0; i < buffers.size() && i < answer.buffers.size(); ++i)
        if (answer.buffers[i].size() == buffers[i].length)
            memcpy(reinterpret_cast<void*>(
                       static_cast<uintptr_t>(fieldU64(arg, buffers[i].pointerField))),
                   answer.buffers[i].data(), buffers[i].length);
    return answer.pid;
}

namespace {

/// Records of plain numbers travel as a count and their bytes.
template <typename T> std::string encodeRecords(const std::vector<T>& records) {
    static_assert(std::is_trivially_copyable_v<T> && std::has_unique_object_representations_v<T>,
                  "a record is its bytes, without padding");
    std::string out;
    putValue<uint64_t>(out, records.size());
    for (const T& r : records)
        putValue(out, r);
    return out;
}

template <typename T> bool decodeRecords(const std::string& bytes, std::vector<T>* records) {
    Reader r{bytes};
    uint64_t n = 0;
    if (!r.value(&n) || n > bytes.size() / sizeof(T))
        return false;
    records->assign(n, T());
    for (T& record : *records)
        if (!r.value(&record))
            return false;
    return r.at == bytes.size();
}

} // namespace

std::string encodeNumbers(const std::vector<uint64_t>& numbers) {
    return encodeRecords(numbers);
}
bool decodeNumbers(const std::string& bytes, std::vector<uint64_t>* numbers) {
    return decodeRecords(bytes, numbers);
}

std::string encodeBos(const std::vector<BoInfo>& bos) {
    return encodeRecords(bos);
}
bool decodeBos(const std::string& bytes, std::vector<BoInfo>* bos) {
    return decodeRecords(bytes, bos);
}
std::string encodeQueues(const std::vector<QueueInfo>& queues) {
    return encodeRecords(queues);
}
bool decodeQueues(const std::string& bytes, std::vector<QueueInfo>* queues) {
    return decodeRecords(bytes, queues);
}
std::string encodeEvents(const std::vector<EventInfo>& events) {
    return encodeRecords(events);
}
bool decodeEvents(const std::string& bytes, std::vector<EventInfo>* events) {
    return decodeRecords(bytes, events);
}

} // namespace kfddriver
