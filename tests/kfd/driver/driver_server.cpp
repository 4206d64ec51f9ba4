#include "driver_server.h"

#include "kfd_test_machine.h"
#include "render_node_protocol.h"
#include "render_node_sysfs.h"

#include "kfd/kfd_criu.h"

#include "topology/synth.h"
#include "topology/sysfs.h"

#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

namespace kfddriver {

namespace {

Message reply(int result) {
    Message m;
    m.pid = result;
    return m;
}

std::string baseName(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Whether `caller` traces `tracee` (TracerPid of /proc/TRACEE/status): kfd_ioctl lets a
/// process's ptrace parent use its KFD file.
bool tracedBy(int tracee, int caller) {
    std::ifstream status("/proc/" + std::to_string(tracee) + "/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("TracerPid:", 0) == 0)
            return atoi(line.c_str() + 10) == caller && caller > 0;
    return false;
}

/// Whether task `pid` has exited (gone, or a zombie whose files the kernel has closed).
bool taskExited(int pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line))
        return true;
    size_t paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() &&
           (line[paren + 2] == 'Z' || line[paren + 2] == 'X');
}

/// The errno named `name` (EIO...), or 0.
int errnoNamed(const std::string& name) {
    for (int e = 1; e < 200; ++e)
        if (const char* n = strerrorname_np(e); n && name == n)
            return e;
    return 0;
}

/// The pid `pid` has in its own pid namespace: the last of NSpid in /proc/PID/status (the kernel's
/// task_pid_nr_ns in the task's active namespace); `pid` itself when it cannot be read.
uint32_t namespacePid(int pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("NSpid:", 0) == 0) {
            size_t last = line.find_last_of(" \t");
            return static_cast<uint32_t>(atoi(line.c_str() + last + 1));
        }
    return static_cast<uint32_t>(pid);
}

} // namespace

std::string stallName(const Message& request) {
    if (request.op == static_cast<uint32_t>(Op::Libdrm)) {
        if (request.a == static_cast<uint64_t>(LibdrmCall::SubmitSdma))
            return "submitSdma";
        if (request.a == static_cast<uint64_t>(LibdrmCall::BoImportDmabuf))
            return "boImportDmabuf";
        return "";
    }
    if (request.op != static_cast<uint32_t>(Op::Ioctl) || request.a != AMDKFD_IOC_CRIU_OP ||
        request.text.size() < sizeof(kfd_ioctl_criu_args))
        return "";
    kfd_ioctl_criu_args args{};
    memcpy(&args, request.text.data(), sizeof(args));
    return std::string("ioctl:") + kfd::criuOpName(args.op);
}

bool parseFaults(const std::string& text, std::vector<InjectedFault>* out, std::string* error) {
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
        std::istringstream words(line);
        InjectedFault f;
        std::string err, rest;
        if (!(words >> f.name))
            continue; // an empty line
        if (!(words >> err) ||
            (f.err = err == "STALL" ? InjectedFault::kStall : errnoNamed(err)) == 0 ||
            (words >> rest && (rest.find_first_not_of("0123456789") != std::string::npos ||
                               (f.nth = atoi(rest.c_str())) < 1)) ||
            words >> rest) {
            *error = "line " + std::to_string(number) + " \"" + line +
                     "\" is not NAME ERRNO [NTH] (an errno name such as EIO or STALL, NTH from 1)";
            return false;
        }
        out->push_back(f);
    }
    return true;
}

DriverServer::DriverServer(const std::string& root, const MachineSpec& spec, std::string* error)
    : root_(root), noKfd_(spec.noKfd) {
    topology::Topology topology =
        topology::makeSyntheticTopology(fakekfd::machineSpec(spec.gpus, spec.gpuIdBase));
    if (auto written = topology::writeKfdTopology(topology, sysfsPath(root)); !written.ok()) {
        *error = written.error().describe();
        return;
    }
    for (const topology::Node* gpu : topology.gpus()) {
        RenderNodeSysfs node;
        node.minor = gpu->renderMinor();
        node.pciDomain = static_cast<uint32_t>(gpu->prop("domain"));
        node.pciLocation = static_cast<uint32_t>(gpu->prop("location_id"));
        node.deviceId = static_cast<uint32_t>(gpu->prop("device_id"));
        if (int e = node.minor < 0 ? 0 : describeRenderNode(root, node); e < 0) {
            *error = "cannot describe renderD" + std::to_string(node.minor) + " in " +
                     drmSysfsPath(root) + ": " + strerror(-e);
            return;
        }
    }
    if (mkdir(filesPath(root).c_str(), 0755) != 0 && errno != EEXIST) {
        *error = "cannot make " + filesPath(root) + ": " + strerror(errno);
        return;
    }
    memory_ = std::make_shared<LoopMemory>(root + "/memory", spec.memoryBytes, error);
    if (memory_->fd() < 0)
        return;
    std::string node = memoryNodePath(root);
    ::unlink(node.c_str());
    if (mknod(node.c_str(), S_IFBLK | 0600, memory_->rdev()) != 0) {
        *error = "cannot make " + node + ": " + strerror(errno);
        return;
    }
    kernel_ = std::make_shared<fakekfd::FakeKernel>(topology, "/dev");
    kernel_->setCpuMappableBos(true);
    kernel_->setMemoryPlacement(memory_);
    kernel_->setTracerCheck(tracedBy);
    for (int minor : spec.hiddenRenderMinors)
        kernel_->hideRenderNode(minor);
    kernel_->setNamespacePid(namespacePid);
    render_ = std::make_unique<RenderNodeService>(root, memory_);
    kernel_->setForeignDmabufs(render_.get());

    std::string path = socketPath(root);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) {
        *error = "the driver's socket path " + path + " is longer than a unix socket's " +
                 std::to_string(sizeof(addr.sun_path) - 1) + " bytes";
        return;
    }
    memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    ::unlink(path.c_str());
    listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listener_, 64) != 0) {
        *error = "cannot listen on " + path + ": " + strerror(errno);
        return;
    }
    error->clear();
}

DriverServer::~DriverServer() {
    if (listener_ >= 0) {
        ::close(listener_);
        ::unlink(socketPath(root_).c_str());
    }
    if (kernel_)
        kernel_->setForeignDmabufs(nullptr);
    render_.reset(); // its BOs and the KFD's before the memory they live in
    kernel_.reset();
}

namespace {
/// The pid of the process at the other end of `sock`, as the kernel saw it connect (in this
/// process's pid namespace), or 0.
int peerPid(int sock) {
    ucred cred{};
    socklen_t len = sizeof(cred);
    return getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.pid : 0;
}
} // namespace

int DriverServer::applyFaultsFile() {
    std::string path = root_ + "/faults";
    std::ifstream in(path);
    if (!in)
        return 0;
    std::stringstream text;
    text << in.rdbuf();
    ::unlink(path.c_str());
    std::vector<InjectedFault> faults;
    std::string error;
    if (!parseFaults(text.str(), &faults, &error)) {
        fprintf(stderr, "kfd-driver: %s: %s\n", path.c_str(), error.c_str());
        return -EINVAL;
    }
    for (const InjectedFault& f : faults) {
        if (f.name.rfind(kRenderFaultPrefix, 0) == 0 && f.err != InjectedFault::kStall) {
            std::string ioctl = f.name.substr(strlen(kRenderFaultPrefix));
            if (!render_->failIoctl(ioctl, f.err, f.nth)) {
                fprintf(stderr, "kfd-driver: %s: %s: no render-node ioctl %s is served\n",
                        path.c_str(), f.name.c_str(), ioctl.c_str());
                return -EINVAL;
            }
        } else if (f.err == InjectedFault::kStall) {
            stall_ = f;
        } else {
            kernel_->failCall(f.name, f.err, f.nth);
        }
    }
    return 0;
}

bool DriverServer::stalls(const Message& request) {
    applyFaultsFile();
    if (stall_.nth == 0 || stallName(request) != stall_.name || --stall_.nth > 0)
        return false;
    std::ofstream(root_ + "/stalled") << stall_.name << "\n";
    return true;
}

void DriverServer::reapExitedTasks() {
    for (int pid : kernel_->taskPids())
        if (taskExited(pid))
            kernel_->reapTask(pid);
}

void DriverServer::serve(const volatile int* stop) {
    std::vector<pollfd> fds{{listener_, POLLIN, 0}};
    std::vector<int> pids{0}; // the caller on each connection: the kernel's `current`
    timespec lastReap{};
    clock_gettime(CLOCK_MONOTONIC, &lastReap);
    while (!*stop) {
        int n = poll(fds.data(), fds.size(), 200);
        timespec now{};
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((now.tv_sec - lastReap.tv_sec) * 1000 + (now.tv_nsec - lastReap.tv_nsec) / 1000000 >=
            200) {
            reapExitedTasks();
            lastReap = now;
        }
        if (n < 0 && errno != EINTR)
            break;
        if (n <= 0)
            continue;
        for (size_t i = fds.size(); i-- > 1;) {
            if (!fds[i].revents)
                continue;
            std::string bytes;
            Message request;
            int passed = -1;
            // A stalled call's connection is watched for its caller's end only (events 0).
            bool ok = fds[i].events != 0 && receiveFrame(fds[i].fd, &bytes, &passed) == 0 &&
                      decode(bytes, &request);
            if (ok) {
                request.pid = pids[i]; // what the request says of its sender counts for nothing
                if (stalls(request)) {
                    if (passed >= 0)
                        ::close(passed);
                    fds[i].events = 0;
                    continue;
                }
                ok = sendFrame(fds[i].fd, encode(handle(request, passed))) == 0;
            } else if (passed >= 0) {
                ::close(passed);
            }
            if (!ok) {
                ::close(fds[i].fd);
                fds.erase(fds.begin() + static_cast<long>(i));
                pids.erase(pids.begin() + static_cast<long>(i));
            }
        }
        if (fds[0].revents & POLLIN) {
            int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
            if (client >= 0) {
                fds.push_back({client, POLLIN, 0});
                pids.push_back(peerPid(client));
            }
        }
    }
    for (size_t i = 1; i < fds.size(); ++i)
        ::close(fds[i].fd);
}

Message DriverServer::handle(const Message& request, int passedFd) {
    applyFaultsFile();
    kernel_->setCurrentPid(request.pid);
    if (request.op == static_cast<uint32_t>(Op::Libdrm))
        return libdrm(request, passedFd);
    if (passedFd >= 0)
        ::close(passedFd);
    switch (static_cast<Op>(request.op)) {
    case Op::Open:
        return open(request);
    case Op::Ioctl:
        return ioctl(request);
    case Op::Mapping:
        return mapping(request);
    case Op::Fstat:
        return fstat(request);
    case Op::Stat:
        return stat(request);
    case Op::ListBos:
    case Op::ListQueues:
    case Op::ListEvents:
        return describeProcess(request);
    case Op::Libdrm:
        break;
    }
    return reply(-EINVAL);
}

Message DriverServer::open(const Message& request) {
    if (noKfd_ && request.text == "/dev/kfd")
        return reply(-ENOENT);
    int id = kernel_->taskOpen(request.text, static_cast<int>(request.a));
    if (id < 0)
        return reply(id);
    // The process's fd is an fd of a node of the loop device of its own (the file's identity:
    // every dup, fork and pidfd_getfd of it names this path in /proc/PID/fd), named as the
    // device is, so that a mapping of it shows as a mapping of "kfd" or "renderD<minor>".
    std::string name = baseName(request.text);
    int e = memory_->makeFileNode(root_, id, name);
    if (e == 0)
        e = render_->opened(id, request.text);
    if (e < 0) {
        kernel_->taskClose(id);
        return reply(e);
    }
    Message m = reply(0);
    m.file = id;
    m.text = filesPath(root_) + "/" + std::to_string(id) + "/" + name;
    return m;
}

int DriverServer::makeDmabufNodes(const Message& request, const std::vector<std::string>& buffers) {
    if (request.a != AMDKFD_IOC_CRIU_OP || request.text.size() < sizeof(kfd_ioctl_criu_args))
        return 0;
    kfd_ioctl_criu_args args{};
    memcpy(&args, request.text.data(), sizeof(args));
    if (args.op != KFD_CRIU_OP_CHECKPOINT && args.op != KFD_CRIU_OP_RESTORE)
        return 0;
    auto layout = driverIoctlBuffers(request.a, request.text.data(), request.text.size());
    for (size_t i = 0; i < layout.size() && i < buffers.size(); ++i) {
        if (layout[i].pointerField != offsetof(kfd_ioctl_criu_args, bos))
            continue;
        const std::string& bos = buffers[i];
        for (size_t at = 0; at + sizeof(kfd_criu_bo_bucket) <= bos.size();
             at += sizeof(kfd_criu_bo_bucket)) {
            kfd_criu_bo_bucket bo{};
            memcpy(&bo, bos.data() + at, sizeof(bo));
            if (bo.dmabuf_fd != KFD_INVALID_FD)
                if (int e = memory_->makeFileNode(root_, bo.dmabuf_fd, "dmabuf"); e < 0)
                    return e;
        }
    }
    return 0;
}

Message DriverServer::ioctl(const Message& request) {
    if (request.b == kDrmUserIoctl)
        return render_->ioctl(request.pid, request);
    std::string arg = request.text;
    auto buffers = driverIoctlBuffers(request.a, arg.data(), arg.size());
    if (buffers.size() != request.buffers.size())
        return reply(-EFAULT);
    std::vector<std::string> copies = request.buffers;
    for (size_t i = 0; i < buffers.size(); ++i) {
        if (copies[i].size() != buffers[i].length)
            return reply(-EFAULT);
        uint64_t local = reinterpret_cast<uintptr_t>(copies[i].data());
        memcpy(arg.data() + buffers[i].pointerField, &local, sizeof(local));
    }
    Message m = reply(kernel_->ioctl(static_cast<int>(request.file), request.a,
                                     arg.empty() ? nullptr : arg.data()));
    if (m.pid == 0)
        m.pid = makeDmabufNodes(request, copies);
    m.text = std::move(arg);
    m.buffers = std::move(copies);
    return m;
}

Message DriverServer::mapping(const Message& request) {
    if (render_->isFenceFile(request.file))
        return reply(-ENODEV); // neither a syncobj's file nor a sync file has mmap
    if (render_->isDmabuf(request.file)) {
        uint64_t where = 0;
        Message m = reply(render_->dmabufMapping(request.file, request.a, request.b, &where));
        m.a = where;
        return m;
    }
    if (RenderNodeService::servesOffset(request.a)) {
        uint64_t where = 0;
        Message m = reply(render_->mapping(request.file, request.a, request.b, &where));
        m.a = where;
        return m;
    }
    fakekfd::MemoryRegion region;
    int r = kernel_->mappingOf(static_cast<int>(request.file), request.b, request.a, &region);
    if (r == 0 && region.fd != memory_->fd())
        r = -ENODEV; // memory outside the machine's: nothing another process could map
    Message m = reply(r);
    m.a = region.base;
    return m;
}

Message DriverServer::fstat(const Message& request) {
    struct stat st {};
    Message m = reply(render_->isDmabuf(request.file) ? render_->dmabufStat(request.file, &st)
                      : render_->isFenceFile(request.file)
                          ? render_->fenceFileStat(request.file, &st)
                          : kernel_->fstat(static_cast<int>(request.file), &st));
    m.text.assign(reinterpret_cast<const char*>(&st), sizeof(st));
    return m;
}

Message DriverServer::stat(const Message& request) {
    if (noKfd_ && request.text == "/dev/kfd")
        return reply(-ENOENT);
    struct stat st {};
    Message m = reply(kernel_->stat(request.text, &st));
    m.text.assign(reinterpret_cast<const char*>(&st), sizeof(st));
    return m;
}

Message DriverServer::describeProcess(const Message& request) {
    if (request.a == 0 && request.op == static_cast<uint32_t>(Op::ListBos)) {
        // Process 0: the pids of every KFD process the driver holds (tests, kfd-driver-query).
        std::vector<uint64_t> pids;
        for (int pid : kernel_->processPids())
            pids.push_back(static_cast<uint64_t>(pid));
        Message m = reply(0);
        m.text = encodeNumbers(pids);
        return m;
    }
    fakekfd::FakeProcess* p = kernel_->process(static_cast<int>(request.a));
    if (!p)
        return reply(-ESRCH);
    Message m = reply(0);
    if (request.op == static_cast<uint32_t>(Op::ListBos)) {
        m.text = encodeBos(bosOf(*p));
    } else if (request.op == static_cast<uint32_t>(Op::ListQueues)) {
        m.text = encodeQueues(queuesOf(*p));
        m.a = p->paused ? 1 : 0; // queues_paused: evicted by PROCESS_INFO until UNPAUSE
        m.b = static_cast<uint64_t>(p->evictions);
    } else {
        std::vector<EventInfo> events;
        for (const fakekfd::FakeEvent& e : p->events)
            events.push_back({e.id, e.type, e.autoReset ? 1u : 0u, e.signaled ? 1u : 0u});
        m.text = encodeEvents(events);
        m.a = p->eventPageHandle;
    }
    return m;
}

std::vector<BoInfo> DriverServer::bosOf(const fakekfd::FakeProcess& p) const {
    std::vector<BoInfo> bos;
    for (const auto& bo : p.bos)
        bos.push_back({bo->addr, bo->size, bo->mmapOffset, memoryOffsetOf(bo->mem), bo->actualGpuId,
                       bo->allocFlags});
    return bos;
}

std::vector<QueueInfo> DriverServer::queuesOf(const fakekfd::FakeProcess& p) const {
    std::vector<QueueInfo> queues;
    for (const fakekfd::FakeQueue& q : p.queues) {
        QueueInfo info;
        info.ringBase = q.ringBase;
        info.ringSize = q.ringSize;
        info.writePtr = q.writePtr;
        info.readPtr = q.readPtr;
        fakekfd::MemoryRegion doorbell;
        if (fakekfd::FakeKernel::doorbellOf(p, q, &doorbell))
            info.doorbellMemoryOffset = memoryOffsetOf(doorbell);
        info.id = q.id;
        info.gpuId = q.actualGpuId;
        info.type = q.type;
        info.doorbellIndex = q.doorbellIndex;
        queues.push_back(info);
    }
    return queues;
}

uint64_t DriverServer::memoryOffsetOf(const fakekfd::MemoryRegion& region) const {
    return region.fd == memory_->fd() ? region.base : BoInfo::kNoMemory;
}

} // namespace kfddriver
