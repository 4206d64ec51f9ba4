#include "fake_render_node.h"

#include "amdgpu-drm/paths.h"
#include "uapi.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace fakedrm {

uint32_t File::freeHandle() const {
    uint32_t h = 1;
    while (handles.count(h))
        ++h;
    return h;
}

uint32_t File::handleOf(const Bo& bo) const {
    for (const auto& [h, b] : handles)
        if (b.get() == &bo)
            return h;
    return 0;
}

/// The memfd name of a dma-buf: what a process that receives it needs to make it a BO.
constexpr const char* kDmabufName = "fakedrm-dmabuf";
/// The GTT a GPU of this fake offers (AMDGPU_INFO_VRAM_GTT, AMDGPU_INFO_MEMORY).
constexpr uint64_t kGttSize = 128ull << 30;

SharedPages::~SharedPages() {
    munmap(addr, size);
    ::close(fd);
}

FakeKernel::FakeKernel() = default;
FakeKernel::~FakeKernel() = default;

void FakeKernel::addGpu(const GpuSpec& spec) {
    gpus_[spec.minor].spec = spec;
}

void FakeKernel::failIoctl(unsigned long request, int nth, int err) {
    failures_[request] = {nth, err};
}

bool FakeKernel::shouldFail(unsigned long request, int* err) {
    auto it = failures_.find(request);
    if (it == failures_.end() || it->second.first <= 0)
        return false;
    if (--it->second.first != 0)
        return false;
    *err = it->second.second;
    return true;
}

FakeKernel::Gpu* FakeKernel::gpu(unsigned minor) {
    auto it = gpus_.find(minor);
    return it == gpus_.end() ? nullptr : &it->second;
}

int FakeKernel::newFd(FdObj obj) {
    int fd = nextFd_++;
    fds_[fd] = std::move(obj);
    return fd;
}

std::shared_ptr<File> FakeKernel::fileOf(int fd) const {
    auto it = fds_.find(fd);
    return it == fds_.end() ? nullptr : it->second.file;
}

void FakeKernel::setProcessFd(int pid, int targetFd, int fd) {
    processFds_[{pid, targetFd}] = fileOf(fd);
}

int FakeKernel::statNode(const std::string& path, struct stat* st) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    int minor = devDir_.minorOf(path);
    if (minor < 0 || !gpu(static_cast<unsigned>(minor)))
        return -ENOENT;
    memset(st, 0, sizeof(*st));
    st->st_mode = S_IFCHR | 0666;
    st->st_rdev = topology::renderNodeRdev(minor);
    return 0;
}

int FakeKernel::open(const std::string& path) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    int minor = devDir_.minorOf(path);
    if (minor < 0 || !gpu(static_cast<unsigned>(minor)))
        return -ENOENT;
    if (devDir_.denied(minor))
        return -EPERM;
    auto file = std::make_shared<File>();
    file->clientId = nextClient_++;
    file->minor = static_cast<unsigned>(minor);
    return newFd(FdObj{file, nullptr});
}

void FakeKernel::close(int fd) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto it = fds_.find(fd);
    if (it != fds_.end() && it->second.real)
        ::close(fd);
    fds_.erase(fd);
}

int FakeKernel::dup(int fd) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto it = fds_.find(fd);
    if (it == fds_.end())
        return -EBADF;
    if (!it->second.real)
        return newFd(it->second);
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
        return -errno;
    fds_[copy] = it->second;
    return copy;
}

int FakeKernel::fstat(int fd, struct stat* st) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto it = fds_.find(fd);
    if (it == fds_.end())
        return -EBADF;
    *st = {};
    if (it->second.dmabuf) {
        st->st_ino = it->second.dmabuf->dmabufInode;
        st->st_mode = S_IFREG | 0600;
    } else if (it->second.syncobj) {
        st->st_mode = S_IFREG | 0600; // an anon inode ("syncobj_file")
    } else {
        st->st_mode = S_IFCHR | 0666;
        st->st_rdev = makedev(drm::kDrmMajor, it->second.file->minor);
    }
    return 0;
}

void* FakeKernel::mmap(int fd, uint64_t offset, uint64_t size, int, int* err) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto file = fileOf(fd);
    if (!file) {
        *err = EBADF;
        return nullptr;
    }
    // drm_gem_mmap: the offset names an object this file holds a handle to.
    for (const auto& [h, bo] : file->handles) {
        if (bo->mmapOffset && offset >= bo->mmapOffset &&
            offset + size <= bo->mmapOffset + bo->size)
            return bo->bytes() + (offset - bo->mmapOffset);
    }
    *err = EACCES;
    return nullptr;
}

void FakeKernel::munmap(void*, uint64_t) {}

int FakeKernel::pidGetFd(int pid, int targetFd) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (pidGetFdErrno)
        return -pidGetFdErrno;
    auto it = processFds_.find({pid, targetFd});
    if (it == processFds_.end())
        return -EBADF;
    return newFd(FdObj{it->second, nullptr});
}

int FakeKernel::sameFile(int pid1, int fd1, int pid2, int fd2) {
    auto lookup = [&](int pid, int fd) -> std::shared_ptr<File> {
        if (pid == kSelfPid)
            return fileOf(fd);
        auto it = processFds_.find({pid, fd});
        return it == processFds_.end() ? nullptr : it->second;
    };
    auto a = lookup(pid1, fd1), b = lookup(pid2, fd2);
    if (!a || !b)
        return -EBADF;
    return a == b ? 1 : 0;
}

// ------------------------------------------------------------------------------ ioctls

int FakeKernel::ioctl(int fd, unsigned long request, void* arg) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    ++ioctlCounts[request];
    int err = 0;
    if (shouldFail(request, &err))
        return -err;
    auto obj = fds_.find(fd);
    if (obj != fds_.end() && obj->second.syncFile)
        return syncFileIoctl(*obj->second.syncFile, request, arg);
    if (obj != fds_.end() && obj->second.syncobj)
        return -ENOTTY; // drm_syncobj_file_fops has no ioctl
    auto file = fileOf(fd);
    if (!file)
        return -EBADF;
    return ioctlGem(*file, request, arg);
}

int FakeKernel::ioctlGem(File& file, unsigned long request, void* arg) {
    Gpu* g = gpu(file.minor);
    switch (request) {
    case DRM_IOCTL_GET_CAP: {
        // drm_getcap: what any DRM file may ask (amdgpu has syncobjs and timelines, and PRIME
        // both ways); the modesetting caps a render node's user does not need are not served.
        auto* c = static_cast<drm_get_cap*>(arg);
        switch (c->capability) {
        case DRM_CAP_TIMESTAMP_MONOTONIC:
        case DRM_CAP_SYNCOBJ:
        case DRM_CAP_SYNCOBJ_TIMELINE:
            c->value = 1;
            return 0;
        case DRM_CAP_PRIME:
            c->value = DRM_PRIME_CAP_IMPORT | DRM_PRIME_CAP_EXPORT;
            return 0;
        default:
            return -EINVAL;
        }
    }
    case DRM_IOCTL_VERSION: {
        // drm_version: the driver's version (amdgpu: KMS 3.x), each string copied up to the
        // length the caller gave (drm_copy_field), the lengths answering the full ones.
        auto* v = static_cast<drm_version*>(arg);
        v->version_major = 3;
        v->version_minor = 57;
        v->version_patchlevel = 0;
        auto copyField = [](char* to, __kernel_size_t* len, const std::string& text) {
            if (to)
                memcpy(to, text.data(), std::min<size_t>(*len, text.size()));
            *len = text.size();
        };
        copyField(v->name, &v->name_len, g->spec.driver);
        copyField(v->date, &v->date_len, "20150101");
        copyField(v->desc, &v->desc_len, "AMD GPU");
        return 0;
    }
    case DRM_IOCTL_AMDGPU_GEM_CREATE: {
        auto* c = static_cast<drm_amdgpu_gem_create*>(arg);
        if (c->in.bo_size == 0 || !(c->in.domains & 0x7f))
            return -EINVAL;
        auto bo = std::make_shared<Bo>();
        bo->id = nextBoId_++;
        bo->minor = file.minor;
        bo->size = (c->in.bo_size + 4095) / 4096 * 4096;
        bo->domains = c->in.domains;
        bo->flags = c->in.domain_flags;
        bo->alignment = c->in.alignment;
        bo->dmabufInode = bo->id;
        if (placement_) {
            if (int r = placement_->place(bo->size, &bo->placed); r < 0)
                return r;
            bo->mmapOffset = bo->placed.offset;
        } else {
            bo->storage = std::make_shared<std::vector<std::byte>>(bo->size);
        }
        uint32_t h = file.freeHandle();
        file.handles[h] = bo;
        *c = {};
        c->out.handle = h;
        events.push_back("create f" + std::to_string(file.clientId) + " h" + std::to_string(h));
        return 0;
    }
    case drm::kIoctlGemChangeHandle:
        return changeHandle(file, arg);
    case DRM_IOCTL_GEM_CLOSE: {
        auto* c = static_cast<drm_gem_close*>(arg);
        auto it = file.handles.find(c->handle);
        if (it == file.handles.end())
            return -EINVAL;
        std::erase_if(file.vm, [&](const Mapping& m) { return m.bo == it->second; });
        file.handles.erase(it);
        return 0;
    }
    case DRM_IOCTL_AMDGPU_GEM_MMAP: {
        auto* m = static_cast<drm_amdgpu_gem_mmap*>(arg);
        auto it = file.handles.find(m->in.handle);
        *m = {}; // amdgpu_gem_mmap_ioctl clears the union before it answers
        if (it == file.handles.end())
            return -ENOENT;
        Bo& bo = *it->second;
        // amdgpu_mode_dumb_mmap: no CPU mapping of a userptr BO or of one made NO_CPU_ACCESS.
        if (bo.userptr || (bo.flags & AMDGPU_GEM_CREATE_NO_CPU_ACCESS))
            return -EPERM;
        if (!bo.mmapOffset) {
            Gpu* owner = gpu(bo.minor);
            bo.mmapOffset = owner->nextMmapOffset;
            owner->nextMmapOffset += bo.size + 4096;
        }
        m->out.addr_ptr = bo.mmapOffset;
        return 0;
    }
    case DRM_IOCTL_AMDGPU_GEM_VA: {
        auto* v = static_cast<drm_amdgpu_gem_va*>(arg);
        // amdgpu_gem_va_ioctl: a PRT range (a sparse resource's, Mesa reserves one at device
        // creation) is mapped with no BO behind it (the file's prt_va); here a BO no handle
        // names stands for "none", as a GPU access there reads zeros and writes nothing.
        if (v->operation == AMDGPU_VA_OP_CLEAR)
            return vaClear(file, v->va_address, v->map_size);
        if ((v->flags & AMDGPU_VM_PAGE_PRT) &&
            (v->operation == AMDGPU_VA_OP_MAP || v->operation == AMDGPU_VA_OP_REPLACE)) {
            // REPLACE: what was mapped there goes first (amdgpu_vm_bo_replace_map).
            if (v->operation == AMDGPU_VA_OP_REPLACE)
                if (int r = vaClear(file, v->va_address, v->map_size); r < 0)
                    return r;
            auto none = std::make_shared<Bo>();
            none->size = v->map_size;
            return vaMapInto(file, Mapping{v->va_address, v->map_size, 0, v->flags, none});
        }
        if ((v->flags & AMDGPU_VM_PAGE_PRT) && v->operation == AMDGPU_VA_OP_UNMAP)
            return vaUnmapFrom(file, v->va_address);
        auto it = file.handles.find(v->handle);
        if (it == file.handles.end())
            return -ENOENT;
        if (v->operation == AMDGPU_VA_OP_UNMAP)
            return vaUnmapFrom(file, v->va_address);
        if (v->operation != AMDGPU_VA_OP_MAP && v->operation != AMDGPU_VA_OP_REPLACE)
            return -EINVAL;
        if (v->offset_in_bo + v->map_size > it->second->size)
            return -EINVAL;
        if (v->operation == AMDGPU_VA_OP_REPLACE)
            if (int r = vaClear(file, v->va_address, v->map_size); r < 0)
                return r;
        int r = vaMapInto(
            file, Mapping{v->va_address, v->map_size, v->offset_in_bo, v->flags, it->second});
        if (r == 0) {
            char buf[64];
            snprintf(buf, sizeof buf, "map f%llu 0x%llx",
                     static_cast<unsigned long long>(file.clientId),
                     static_cast<unsigned long long>(v->va_address));
            events.push_back(buf);
        }
        return r;
    }
    case drm::kIoctlGemListHandles:
        return listHandles(file, arg);
    case drm::kIoctlGemOp:
        return gemOp(file, arg);
    case DRM_IOCTL_AMDGPU_GEM_WAIT_IDLE:
        return waitIdle(file, arg);
    case DRM_IOCTL_AMDGPU_INFO:
        return info(file, arg);
    case DRM_IOCTL_PRIME_HANDLE_TO_FD:
        return primeExport(file, arg);
    case DRM_IOCTL_PRIME_FD_TO_HANDLE:
        return primeImport(file, arg);
    case DRM_IOCTL_AMDGPU_CTX:
        return ctxIoctl(file, arg);
    case DRM_IOCTL_AMDGPU_BO_LIST:
        return boList(file, arg);
    case DRM_IOCTL_AMDGPU_CS:
        return commandSubmit(file, arg);
    case DRM_IOCTL_AMDGPU_WAIT_CS:
        return waitCs(file, arg);
    case DRM_IOCTL_SYNCOBJ_CREATE:
    case DRM_IOCTL_SYNCOBJ_DESTROY:
    case DRM_IOCTL_SYNCOBJ_HANDLE_TO_FD:
    case DRM_IOCTL_SYNCOBJ_FD_TO_HANDLE:
    case DRM_IOCTL_SYNCOBJ_WAIT:
    case DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT:
    case DRM_IOCTL_SYNCOBJ_RESET:
    case DRM_IOCTL_SYNCOBJ_SIGNAL:
    case DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL:
    case DRM_IOCTL_SYNCOBJ_QUERY:
    case DRM_IOCTL_SYNCOBJ_TRANSFER:
        return syncobjIoctl(file, request, arg);
    default:
        return -ENOTTY;
    }
}

// amdgpu_gem_wait_idle_ioctl: in.timeout is an absolute CLOCK_MONOTONIC time in ns (negative as
// int64: no limit); an unknown handle is ENOENT; the fences signalled gives out.status 0, the
// timeout passing first gives out.status 1, both with the ioctl succeeding.
int FakeKernel::waitIdle(File& file, void* arg) {
    auto* w = static_cast<drm_amdgpu_gem_wait_idle*>(arg);
    auto it = file.handles.find(w->in.handle);
    if (it == file.handles.end())
        return -ENOENT;
    Bo& bo = *it->second;
    bool unlimited = static_cast<int64_t>(w->in.timeout) < 0;
    if (bo.busyUntilNs && (unlimited || w->in.timeout >= bo.busyUntilNs)) {
        if (bo.busyUntilNs == Bo::kNever)
            return -EINTR; // an unlimited wait on a hung GPU ends only by a signal
        advanceClock(bo.busyUntilNs);
    } else if (bo.busyUntilNs && w->in.timeout > nowNs) {
        advanceClock(w->in.timeout);
    }
    bool busy = bo.busyUntilNs != 0;
    *w = {};
    w->out.status = busy ? 1 : 0;
    return 0;
}

void FakeKernel::submitWork(int fd, uint32_t handle, uint64_t durationNs,
                            std::vector<std::byte> result) {
    std::shared_ptr<Bo> bo = fileOf(fd)->handles.at(handle);
    bo->busyUntilNs = durationNs == Bo::kNever ? Bo::kNever : nowNs + durationNs;
    bo->pendingWrite = std::move(result);
    busyBos_.push_back(bo);
}

void FakeKernel::advanceClock(uint64_t to) {
    nowNs = std::max(nowNs, to);
    for (const std::weak_ptr<Bo>& weak : busyBos_) {
        std::shared_ptr<Bo> bo = weak.lock();
        if (!bo || !bo->busyUntilNs || bo->busyUntilNs > nowNs)
            continue;
        memcpy(bo->bytes(), bo->pendingWrite.data(),
               std::min<size_t>(bo->size, bo->pendingWrite.size()));
        bo->busyUntilNs = 0;
    }
    std::erase_if(busyBos_, [](const std::weak_ptr<Bo>& w) {
        auto bo = w.lock();
        return !bo || !bo->busyUntilNs;
    });
}

int FakeKernel::vaMapInto(File& file, const Mapping& m) {
    if (m.size == 0 || (m.addr & 4095) || (m.size & 4095))
        return -EINVAL;
    for (const Mapping& other : file.vm)
        if (m.addr < other.addr + other.size && other.addr < m.addr + m.size)
            return -EINVAL; // amdgpu_vm_bo_map: an overlapping mapping exists
    file.vm.push_back(m);
    return 0;
}

int FakeKernel::vaUnmapFrom(File& file, uint64_t addr) {
    auto it = std::find_if(file.vm.begin(), file.vm.end(),
                           [&](const Mapping& m) { return m.addr == addr; });
    if (it == file.vm.end())
        return -ENOENT;
    file.vm.erase(it);
    return 0;
}

int FakeKernel::vaClear(File& file, uint64_t addr, uint64_t size) {
    if (size == 0 || (addr & 4095) || (size & 4095))
        return -EINVAL;
    // amdgpu_vm_bo_clear_mappings: what lies in [addr, addr + size) goes; a mapping that
    // reaches out of it keeps its parts outside.
    std::vector<Mapping> kept;
    for (const Mapping& m : file.vm) {
        uint64_t end = m.addr + m.size;
        if (end <= addr || addr + size <= m.addr) {
            kept.push_back(m);
            continue;
        }
        if (m.addr < addr)
            kept.push_back(Mapping{m.addr, addr - m.addr, m.offset, m.flags, m.bo});
        if (addr + size < end)
            kept.push_back(Mapping{addr + size, end - (addr + size),
                                   m.offset + (addr + size - m.addr), m.flags, m.bo});
    }
    file.vm = std::move(kept);
    return 0;
}

int FakeKernel::changeHandle(File& file, void* arg) {
    auto* c = static_cast<drm::GemChangeHandle*>(arg);
    changeHandleCalls.push_back({c->handle, c->newHandle, file.handles.count(c->handle) != 0});
    if (profile != KernelProfile::Linux6_18)
        return -EINVAL; // unknown before 6.18, drm_invalid_op from attempt 4 on
    // drm_gem_change_handle_ioctl as 6.18.0 to 6.18.35 run it (before attempt 4): the new
    // handle's idr_alloc limit, then the lookup of the old handle, and only then
    // handle == new_handle returns 0.
    if (c->newHandle > static_cast<uint32_t>(INT32_MAX))
        return -EINVAL;
    auto it = file.handles.find(c->handle);
    if (it == file.handles.end())
        return -ENOENT;
    if (c->handle == c->newHandle)
        return 0;
    // idr_alloc of the one-number range [new, new + 1): ENOSPC when it is taken, and for 0,
    // below the file's idr base of 1 (idr_init_base in drm_gem_open).
    if (c->newHandle == 0 || file.handles.count(c->newHandle))
        return -ENOSPC;
    file.handles[c->newHandle] = it->second;
    file.handles.erase(it);
    return 0;
}

int FakeKernel::listHandles(File& file, void* arg) {
    if (profile == KernelProfile::Before6_18)
        return -EINVAL;
    auto* a = static_cast<drm::GemListHandles*>(arg);
    uint32_t count = static_cast<uint32_t>(file.handles.size());
    if (listHandlesInflate) {
        a->numEntries += listHandlesInflate; // always one more than offered
        return 0;
    }
    if (a->numEntries < count) {
        a->numEntries = count;
        return 0;
    }
    auto* out = reinterpret_cast<drm::GemListHandlesEntry*>(static_cast<uintptr_t>(a->entries));
    uint32_t i = 0;
    for (const auto& [h, bo] : file.handles) {
        out[i] = {};
        out[i].gemHandle = h;
        out[i].flags = bo->imported ? drm::kListHandlesIsImport : 0;
        out[i].size = bo->size;
        out[i].preferredDomains = bo->domains;
        out[i].allocFlags = bo->flags;
        out[i].alignment = bo->alignment;
        ++i;
    }
    a->numEntries = count;
    return 0;
}

int FakeKernel::gemOp(File& file, void* arg) {
    auto* a = static_cast<drm::GemOp*>(arg);
    // amdgpu_gem_op_ioctl looks the handle up before it looks at the op.
    auto it = file.handles.find(a->handle);
    if (it == file.handles.end())
        return -ENOENT;
    if (a->op != drm::kGemOpGetMappingInfo || profile == KernelProfile::Before6_18)
        return -EINVAL;
    std::vector<Mapping> mine;
    for (const Mapping& m : file.vm)
        if (m.bo == it->second)
            mine.push_back(m);
    std::sort(mine.begin(), mine.end(),
              [](const Mapping& x, const Mapping& y) { return x.addr < y.addr; });
    if (a->numEntries < mine.size()) {
        a->numEntries = static_cast<uint32_t>(mine.size());
        return mappingInfoEnospc ? -ENOSPC : 0;
    }
    auto* out = reinterpret_cast<drm::GemVmEntry*>(static_cast<uintptr_t>(a->value));
    for (size_t i = 0; i < mine.size(); ++i)
        out[i] = drm::GemVmEntry{mine[i].addr, mine[i].size, mine[i].offset, mine[i].flags};
    a->numEntries = static_cast<uint32_t>(mine.size());
    return 0;
}

int FakeKernel::info(File& file, void* arg) {
    auto* q = static_cast<drm_amdgpu_info*>(arg);
    const GpuSpec& s = gpu(file.minor)->spec;
    void* out = reinterpret_cast<void*>(static_cast<uintptr_t>(q->return_pointer));
    auto give = [&](const void* data, size_t n) {
        memcpy(out, data, std::min<size_t>(n, q->return_size));
        return 0;
    };
    switch (q->query) {
    case AMDGPU_INFO_DEV_INFO: {
        drm_amdgpu_info_device d{};
        d.device_id = s.deviceId;
        d.family = s.family;
        // soc15_common_early_init: an Aldebaran's (GC 9.4.2) external revision is its revision
        // + 0x3c, which user space (Mesa's ac_gpu_info) reads with the family to name the chip.
        d.external_rev = 0x3c;
        d.num_shader_engines = 8;
        d.num_shader_arrays_per_engine = 1;
        d.cu_active_number = s.cus;
        d.num_cu_per_sh = s.cus / 8;
        d.wave_front_size = 64;
        d.max_engine_clock = 1700000;
        // amdgpu_info_ioctl: the general VA range below the hole (a 48-bit VM).
        d.virtual_address_offset = 2ull << 20;
        d.virtual_address_max = 0x0000'8000'0000'0000ull;
        d.virtual_address_alignment = 4096; // max(PAGE_SIZE, AMDGPU_GPU_PAGE_SIZE)
        d.pte_fragment_size = 2u << 20;
        d.gart_page_size = 4096;
        return give(&d, sizeof d);
    }
    case AMDGPU_INFO_ACCEL_WORKING: {
        uint32_t working = 1;
        return give(&working, sizeof working);
    }
    case AMDGPU_INFO_READ_MMR_REG: {
        // amdgpu_info_ioctl: up to 128 registers, each one the ASIC allows reading
        // (soc15_allowed_read_registers); this fake knows GB_ADDR_CONFIG, which libdrm reads
        // at device init, with a gfx9 value.
        constexpr uint32_t kGbAddrConfig = 0x263e, kGbAddrConfigValue = 0x2a114042;
        uint32_t count = q->read_mmr_reg.count;
        if (count > 128 || q->return_size < count * 4ull)
            return -EINVAL;
        std::vector<uint32_t> regs(count);
        for (uint32_t i = 0; i < count; ++i) {
            if (q->read_mmr_reg.dword_offset + i != kGbAddrConfig)
                return -EINVAL;
            regs[i] = kGbAddrConfigValue;
        }
        return give(regs.data(), regs.size() * 4);
    }
    case AMDGPU_INFO_VRAM_GTT: {
        drm_amdgpu_info_vram_gtt v{};
        v.vram_size = s.vramSize;
        v.vram_cpu_accessible_size = s.visibleVram;
        v.gtt_size = kGttSize;
        return give(&v, sizeof v);
    }
    case AMDGPU_INFO_MEMORY: {
        // amdgpu_info_ioctl: each heap's size, what is usable of it (this fake pins nothing and
        // reserves no VM space) and the largest allocation, three quarters of that. Usage is 0:
        // the fake keeps no count of its heaps.
        drm_amdgpu_memory_info m{};
        auto heap = [](drm_amdgpu_heap_info* h, uint64_t size) {
            h->total_heap_size = size;
            h->usable_heap_size = size;
            h->max_allocation = size * 3 / 4;
        };
        heap(&m.vram, s.vramSize);
        heap(&m.cpu_accessible_vram, s.visibleVram);
        heap(&m.gtt, kGttSize);
        return give(&m, sizeof m);
    }
    case AMDGPU_INFO_FW_VERSION: {
        drm_amdgpu_info_firmware fw{};
        if (q->query_fw.fw_type == AMDGPU_INFO_FW_GFX_MEC)
            fw.ver = s.mecFw;
        else if (q->query_fw.fw_type == AMDGPU_INFO_FW_SDMA)
            fw.ver = s.sdmaFw;
        else if (q->query_fw.fw_type > AMDGPU_INFO_FW_TOC)
            return -EINVAL; // amdgpu_firmware_info: a type it does not know
        // Another type it knows: version 0, as for firmware this GPU does not load (an MI-class
        // GPU's graphics microcode: ME, PFP, CE).
        return give(&fw, sizeof fw);
    }
    case AMDGPU_INFO_HW_IP_INFO: {
        // amdgpu_hw_ip_info: the rings of one engine type. An MI-class GPU (this fake's GPUs)
        // has no GFX ring; its compute rings (4 here) and SDMA engines, one ring each.
        drm_amdgpu_info_hw_ip ip{};
        ip.ib_start_alignment = 32;
        ip.ib_size_alignment = 32;
        if (q->query_hw_ip.type == AMDGPU_HW_IP_COMPUTE) {
            ip.hw_ip_version_major = 9;
            ip.available_rings = 0xf;
        } else if (q->query_hw_ip.type == AMDGPU_HW_IP_DMA) {
            ip.hw_ip_version_major = 4;
            ip.available_rings = (1u << s.sdmaEngines) - 1;
        } else if (q->query_hw_ip.type >= AMDGPU_HW_IP_NUM) {
            return -EINVAL;
        }
        return give(&ip, sizeof ip);
    }
    case AMDGPU_INFO_HW_IP_COUNT: {
        uint32_t n = q->query_hw_ip.type == AMDGPU_HW_IP_DMA ? s.sdmaEngines : 1;
        return give(&n, sizeof n);
    }
    default:
        return -EINVAL;
    }
}

int FakeKernel::sharePages(const std::shared_ptr<Bo>& bo) {
    char name[160];
    snprintf(
        name, sizeof name, "%s %u %llu %llu %llu %llu", kDmabufName, bo->minor,
        static_cast<unsigned long long>(bo->size), static_cast<unsigned long long>(bo->domains),
        static_cast<unsigned long long>(bo->flags), static_cast<unsigned long long>(bo->alignment));
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return errno;
    struct stat st {};
    void* addr = MAP_FAILED;
    if (ftruncate(fd, static_cast<off_t>(bo->size)) == 0 && ::fstat(fd, &st) == 0)
        addr = ::mmap(nullptr, bo->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED) {
        int err = errno ? errno : EIO;
        ::close(fd);
        return err;
    }
    memcpy(addr, bo->bytes(), bo->size);
    bo->pages = std::make_shared<SharedPages>(fd, static_cast<std::byte*>(addr), bo->size,
                                              static_cast<uint64_t>(st.st_ino));
    bo->dmabufInode = bo->pages->inode;
    exported_.push_back(bo);
    return 0;
}

int FakeKernel::primeExport(File& file, void* arg) {
    auto* p = static_cast<drm_prime_handle*>(arg);
    // drm_prime_handle_to_fd_ioctl: no flag but DRM_CLOEXEC and DRM_RDWR.
    if (p->flags & ~static_cast<uint32_t>(DRM_CLOEXEC | DRM_RDWR))
        return -EINVAL;
    auto it = file.handles.find(p->handle);
    if (it == file.handles.end())
        return -ENOENT;
    // amdgpu_gem_prime_export refuses per-VM (VM_ALWAYS_VALID) BOs and userptr BOs, EPERM;
    // NO_CPU_ACCESS is no reason.
    if ((it->second->flags & AMDGPU_GEM_CREATE_VM_ALWAYS_VALID) || it->second->userptr)
        return -EPERM;
    if (it->second->placed.bytes) {
        // setBoPlacement: its pages stay where they were placed; the dma-buf is this fake's fd.
        p->fd = newFd(FdObj{nullptr, it->second});
        return 0;
    }
    if (!it->second->pages)
        if (int err = sharePages(it->second))
            return -err;
    // Every export is a new fd of the one dma-buf file.
    int fd = fcntl(it->second->pages->fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    fds_[fd] = FdObj{nullptr, it->second, true};
    p->fd = fd;
    return 0;
}

std::shared_ptr<Bo> FakeKernel::dmabufBo(int fd) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    auto it = fds_.find(fd);
    return it == fds_.end() ? nullptr : it->second.dmabuf;
}

std::shared_ptr<Bo> FakeKernel::dmabufOf(int fd) {
    auto it = fds_.find(fd);
    if (it != fds_.end())
        return it->second.dmabuf;
    return adoptDmabuf(fd);
}

std::shared_ptr<Bo> FakeKernel::adoptDmabuf(int fd) {
    char link[256];
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
    if (n <= 0)
        return nullptr;
    link[n] = 0;
    unsigned minor = 0;
    unsigned long long size = 0, domains = 0, flags = 0, alignment = 0;
    std::string format = std::string("/memfd:") + kDmabufName + " %u %llu %llu %llu %llu";
    struct stat st {};
    if (sscanf(link, format.c_str(), &minor, &size, &domains, &flags, &alignment) != 5 ||
        ::fstat(fd, &st) != 0)
        return nullptr;
    std::shared_ptr<Bo> bo;
    for (const std::weak_ptr<Bo>& weak : exported_) {
        auto known = weak.lock();
        if (known && known->pages->inode == static_cast<uint64_t>(st.st_ino))
            bo = known; // this process already has the object
    }
    if (!bo) {
        // Exported in another process: the same object there, over the same pages.
        int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        void* addr = own < 0 ? MAP_FAILED
                             : ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
        if (addr == MAP_FAILED) {
            if (own >= 0)
                ::close(own);
            return nullptr;
        }
        bo = std::make_shared<Bo>();
        bo->id = nextBoId_++;
        bo->minor = minor;
        bo->size = size;
        bo->domains = domains;
        bo->flags = flags;
        bo->alignment = alignment;
        bo->pages = std::make_shared<SharedPages>(own, static_cast<std::byte*>(addr), size,
                                                  static_cast<uint64_t>(st.st_ino));
        bo->dmabufInode = bo->pages->inode;
        exported_.push_back(bo);
    }
    fds_[fd] = FdObj{nullptr, bo, true}; // the caller closes it through this fake
    return bo;
}

int FakeKernel::primeImport(File& file, void* arg) {
    auto* p = static_cast<drm_prime_handle*>(arg);
    std::shared_ptr<Bo> src = dmabufOf(p->fd);
    if (!src)
        return -EBADF;
    std::shared_ptr<Bo> bo = src;
    if (src->minor != file.minor) {
        // Another device's dma-buf: a new GEM object over the same pages.
        for (const auto& [h, held] : file.handles)
            if (held->imported && held->dmabufInode == src->dmabufInode) {
                p->handle = h;
                return 0;
            }
        bo = std::make_shared<Bo>(*src);
        bo->id = nextBoId_++;
        bo->minor = file.minor;
        bo->imported = true;
        bo->domains = AMDGPU_GEM_DOMAIN_GTT;
        bo->flags = 0;
        bo->mmapOffset = 0;
    }
    if (uint32_t h = file.handleOf(*bo)) {
        p->handle = h;
        return 0;
    }
    uint32_t h = file.freeHandle();
    file.handles[h] = bo;
    p->handle = h;
    return 0;
}

// ------------------------------------------------------------------------------ libdrm

int FakeKernel::closeRenderNode(int fd) {
    close(fd);
    return 0;
}

int64_t FakeKernel::gpuOfRenderFd(int fd) {
    auto file = fileOf(fd);
    return file ? int64_t{file->minor} : -EBADF;
}

int FakeKernel::importDmabuf(int64_t, int fd, std::shared_ptr<fakesdma::Memory>* memory) {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    std::shared_ptr<Bo> bo = dmabufOf(fd);
    if (!bo)
        return -EBADF;
    *memory = std::make_shared<fakesdma::BytesMemory>(bo->bytes(), bo->size, bo);
    return 0;
}

void FakeKernel::mapped(int fd, uint64_t va, uint64_t size) {
    libdrmMaps.push_back({fileOf(fd)->clientId, Mapping{va, size, 0, 0, nullptr}});
}

void FakeKernel::copied(int64_t gpu, bool, uint64_t) {
    events.push_back("sdma renderD" + std::to_string(gpu));
}

} // namespace fakedrm
