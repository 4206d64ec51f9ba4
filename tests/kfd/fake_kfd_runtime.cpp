// The ioctls a running ROCm process issues on /dev/kfd (what AMD's thunk, libhsakmt, calls at
// start and during a run) and mmap of /dev/kfd and of render nodes, with the argument checks and
// results of Linux 6.1's drivers/gpu/drm/amd/amdkfd/kfd_chardev.c (the function each one mirrors
// is named at it), on the structs of <linux/kfd_ioctl.h>.
#include "fake_kfd.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace fakekfd {

namespace {
constexpr uint64_t kPage = 4096;
constexpr int kMmapTypeShift = 62; // KFD_MMAP_TYPE_SHIFT
constexpr uint64_t kMmapDoorbell = 3ull << kMmapTypeShift;
constexpr uint64_t kMmapEvents = 2ull << kMmapTypeShift;
constexpr uint64_t kMmapMmio = 0ull << kMmapTypeShift;
constexpr uint64_t kMmapGpuIdShift = 46; // KFD_MMAP_GPU_ID_SHIFT
constexpr uint32_t kDoorbellBytes = 8;
constexpr uint32_t kMaxQueues = 1024; // KFD_MAX_NUM_OF_QUEUES_PER_PROCESS
/// The first doorbells of a process page belong to SDMA engines on SOC15 (the
/// doorbell_index.sdma_engine range); compute queues take the rest.
constexpr uint32_t kSdmaDoorbellBase = 0x100;
constexpr uint32_t kFirstNonsignalEvent = 0x80000000u; // KFD_FIRST_NONSIGNAL_EVENT_ID

uint64_t mmapGpuId(uint32_t gpuId) {
    return (static_cast<uint64_t>(gpuId) & 0xffff) << kMmapGpuIdShift;
}
uint32_t handleGpu(uint64_t h) {
    return static_cast<uint32_t>(h >> 32);
}
uint32_t handleIdr(uint64_t h) {
    return static_cast<uint32_t>(h);
}
uint64_t makeHandle(uint32_t gpu, uint32_t idr) {
    return (static_cast<uint64_t>(gpu) << 32) | idr;
}

/// access_ok: the range lies in the user half of x86-64's address space (TASK_SIZE_MAX).
bool accessOk(uint64_t addr, uint64_t size) {
    constexpr uint64_t kTaskSize = (1ull << 47) - kPage;
    return addr <= kTaskSize && size <= kTaskSize - addr;
}

uint64_t nowNs(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int sharedMemfd(const char* name, uint64_t size) {
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
        int e = errno;
        ::close(fd);
        return -e;
    }
    return fd;
}

/// The default placement: a memfd of this process for each BO and kfd page.
class MemfdPlacement final : public MemoryPlacement {
public:
    int placeBo(uint64_t, uint64_t size, MemoryRegion* out) override {
        return place("fake-kfd-bo", size, out);
    }
    int placeKfdPage(uint64_t size, MemoryRegion* out) override {
        return place("fake-kfd-page", size, out);
    }

private:
    static int place(const char* name, uint64_t size, MemoryRegion* out) {
        int fd = sharedMemfd(name, size);
        if (fd < 0)
            return fd;
        *out = {fd, 0, true};
        return 0;
    }
};

void releaseRegion(const MemoryRegion& r) {
    if (r.owned && r.fd >= 0)
        ::close(r.fd);
}
} // namespace

// ------------------------------------------------------------------------------ BO storage

FakeBo::~FakeBo() {
    releaseRegion(mem);
}

FakeProcess::~FakeProcess() {
    for (const auto& [offset, region] : kfdPages)
        releaseRegion(region);
}

void FakeBo::read(uint64_t offset, void* out, uint64_t len) const {
    auto* o = static_cast<uint8_t*>(out);
    if (mem.fd >= 0) {
        ssize_t n = pread(mem.fd, o, len, static_cast<off_t>(mem.base + offset));
        if (n != static_cast<ssize_t>(len))
            memset(o, 0, len);
    } else if (isPattern()) {
        for (uint64_t k = 0; k < len; ++k)
            o[k] = patternByte(patternSeed, offset + k);
    } else {
        memcpy(o, data.data() + offset, len);
    }
}

void FakeBo::write(uint64_t offset, const void* in, uint64_t len) {
    const auto* i = static_cast<const uint8_t*>(in);
    if (mem.fd >= 0) {
        ssize_t n = pwrite(mem.fd, i, len, static_cast<off_t>(mem.base + offset));
        (void)n;
    } else if (isPattern()) {
        for (uint64_t k = 0; k < len; ++k)
            if (i[k] != patternByte(patternSeed, offset + k))
                ++patternMismatches;
        patternBytesWritten += len;
    } else {
        memcpy(data.data() + offset, i, len);
    }
}

void FakeKernel::giveMemory(FakeBo& bo) {
    if (!cpuMappable_ || !kfd::boHasContents(bo.allocFlags) || bo.isPattern() || bo.mem.fd >= 0)
        return;
    if (!placement_)
        placement_ = std::make_shared<MemfdPlacement>();
    MemoryRegion region;
    if (placement_->placeBo(bo.mmapOffset, bo.size, &region) < 0)
        return;
    if (!bo.data.empty() &&
        pwrite(region.fd, bo.data.data(), bo.data.size(), static_cast<off_t>(region.base)) !=
            static_cast<ssize_t>(bo.data.size())) {
        releaseRegion(region);
        return;
    }
    bo.mem = region;
    bo.data.clear();
    bo.data.shrink_to_fit();
}

// ------------------------------------------------------------------------------ lookups

uint32_t FakeKernel::actualOf(const FakeProcess& p, uint32_t user) {
    for (const auto& [actual, u] : p.userOfActual)
        if (u == user)
            return actual;
    return 0;
}

std::shared_ptr<FakeBo> FakeKernel::boOfHandle(FakeProcess& p, uint64_t handle) {
    uint32_t actual = actualOf(p, handleGpu(handle));
    for (const auto& bo : p.bos)
        if (bo->actualGpuId == actual && bo->privTag == handleIdr(handle))
            return bo;
    return nullptr;
}

std::shared_ptr<FakeBo> FakeKernel::boAt(int pid, uint64_t addr) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = processes_.find(pid);
    if (it == processes_.end())
        return nullptr;
    for (const auto& bo : it->second->bos)
        if (bo->addr == addr)
            return bo;
    return nullptr;
}

// ------------------------------------------------------------------------------ ioctls

int FakeKernel::runtimeIoctl(File& f, unsigned long request, void* arg) {
    FakeProcess& p = *f.proc;
    // kfd_ioctl: "Only the process that opened /dev/kfd is allowed to use it".
    if (p.pid != currentPid_)
        return -EBADF;
    switch (request) {
    case AMDKFD_IOC_ACQUIRE_VM:
        return acquireVm(p, static_cast<kfd_ioctl_acquire_vm_args*>(arg));
    case AMDKFD_IOC_GET_PROCESS_APERTURES_NEW:
        return getApertures(p, static_cast<kfd_ioctl_get_process_apertures_new_args*>(arg));
    case AMDKFD_IOC_SET_MEMORY_POLICY: { // kfd_ioctl_set_memory_policy
        auto* a = static_cast<kfd_ioctl_set_memory_policy_args*>(arg);
        if ((a->default_policy != KFD_IOC_CACHE_POLICY_COHERENT &&
             a->default_policy != KFD_IOC_CACHE_POLICY_NONCOHERENT) ||
            (a->alternate_policy != KFD_IOC_CACHE_POLICY_COHERENT &&
             a->alternate_policy != KFD_IOC_CACHE_POLICY_NONCOHERENT))
            return -EINVAL;
        return actualOf(p, a->gpu_id) ? 0 : -EINVAL;
    }
    case AMDKFD_IOC_SET_XNACK_MODE: { // kfd_ioctl_set_xnack_mode
        auto* a = static_cast<kfd_ioctl_set_xnack_mode_args*>(arg);
        if (a->xnack_enabled >= 0) {
            if (!p.queues.empty())
                return -EBUSY; // "Changing XNACK mode with queues present"
            if (a->xnack_enabled)
                return -EPERM; // kfd_process_xnack_mode: the fake's GPUs cannot retry faults
            p.xnack = 0;
        } else {
            a->xnack_enabled = p.xnack;
        }
        return 0;
    }
    case AMDKFD_IOC_GET_CLOCK_COUNTERS: { // kfd_ioctl_get_clock_counters
        auto* a = static_cast<kfd_ioctl_get_clock_counters_args*>(arg);
        a->gpu_clock_counter = actualOf(p, a->gpu_id) ? nowNs(CLOCK_MONOTONIC_RAW) / 10 : 0;
        a->cpu_clock_counter = nowNs(CLOCK_MONOTONIC_RAW);
        a->system_clock_counter = nowNs(CLOCK_BOOTTIME);
        a->system_clock_freq = 1000000000;
        return 0;
    }
    case AMDKFD_IOC_SET_SCRATCH_BACKING_VA: { // kfd_ioctl_set_scratch_backing_va
        auto* a = static_cast<kfd_ioctl_set_scratch_backing_va_args*>(arg);
        uint32_t actual = actualOf(p, a->gpu_id);
        if (!actual)
            return -EINVAL;
        if (!p.vmOfGpu.count(actual))
            return -ENODEV; // kfd_bind_process_to_device: no VM
        p.scratchOfGpu[actual] = a->va_addr;
        return 0;
    }
    case AMDKFD_IOC_SET_TRAP_HANDLER: { // kfd_ioctl_set_trap_handler
        auto* a = static_cast<kfd_ioctl_set_trap_handler_args*>(arg);
        uint32_t actual = actualOf(p, a->gpu_id);
        if (!actual)
            return -EINVAL;
        if (!p.vmOfGpu.count(actual))
            return -ESRCH;
        p.trapHandlerOfGpu[actual] = a->tba_addr;
        return 0;
    }
    case AMDKFD_IOC_ALLOC_MEMORY_OF_GPU:
        return allocMemory(p, static_cast<kfd_ioctl_alloc_memory_of_gpu_args*>(arg));
    case AMDKFD_IOC_FREE_MEMORY_OF_GPU:
        return freeMemory(p, static_cast<kfd_ioctl_free_memory_of_gpu_args*>(arg));
    case AMDKFD_IOC_MAP_MEMORY_TO_GPU:
        return mapMemory(p, static_cast<kfd_ioctl_map_memory_to_gpu_args*>(arg), true);
    case AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU:
        return mapMemory(p, reinterpret_cast<kfd_ioctl_map_memory_to_gpu_args*>(arg), false);
    case AMDKFD_IOC_CREATE_QUEUE:
        return createQueue(p, static_cast<kfd_ioctl_create_queue_args*>(arg));
    case AMDKFD_IOC_DESTROY_QUEUE: { // kfd_ioctl_destroy_queue -> pqm_destroy_queue
        auto* a = static_cast<kfd_ioctl_destroy_queue_args*>(arg);
        auto it = std::find_if(p.queues.begin(), p.queues.end(),
                               [&](const FakeQueue& q) { return q.id == a->queue_id; });
        if (it == p.queues.end())
            return -EINVAL; // "queue id does not match any known queue"
        p.queues.erase(it);
        return 0;
    }
    case AMDKFD_IOC_UPDATE_QUEUE: { // kfd_ioctl_update_queue -> pqm_update_queue_properties
        auto* a = static_cast<kfd_ioctl_update_queue_args*>(arg);
        if (a->queue_percentage > KFD_MAX_QUEUE_PERCENTAGE ||
            a->queue_priority > KFD_MAX_QUEUE_PRIORITY)
            return -EINVAL;
        if (a->ring_base_address && !accessOk(a->ring_base_address, 8))
            return -EFAULT;
        if (a->ring_size && (a->ring_size & (a->ring_size - 1)))
            return -EINVAL;
        auto it = std::find_if(p.queues.begin(), p.queues.end(),
                               [&](const FakeQueue& q) { return q.id == a->queue_id; });
        if (it == p.queues.end())
            return -EFAULT; // "No queue %d exists for update operation"
        it->ringBase = a->ring_base_address;
        it->ringSize = a->ring_size;
        it->percentage = a->queue_percentage;
        it->priority = a->queue_priority;
        return 0;
    }
    case AMDKFD_IOC_CREATE_EVENT:
        return createEvent(p, static_cast<kfd_ioctl_create_event_args*>(arg));
    case AMDKFD_IOC_DESTROY_EVENT:
    case AMDKFD_IOC_SET_EVENT:
    case AMDKFD_IOC_RESET_EVENT: { // kfd_event_destroy / kfd_set_event / kfd_reset_event
        uint32_t id = static_cast<kfd_ioctl_destroy_event_args*>(arg)->event_id;
        auto it = std::find_if(p.events.begin(), p.events.end(),
                               [&](const FakeEvent& e) { return e.id == id; });
        if (it == p.events.end())
            return -EINVAL;
        if (request == AMDKFD_IOC_DESTROY_EVENT)
            p.events.erase(it);
        else if (request == AMDKFD_IOC_SET_EVENT)
            it->signaled = true;
        else
            it->signaled = false;
        return 0;
    }
    case AMDKFD_IOC_WAIT_EVENTS:
        return waitEvents(p, static_cast<kfd_ioctl_wait_events_args*>(arg));
    default:
        unserved_.push_back(request);
        return -ENOTTY; // not implemented by the fake: tests/kfd/README.md lists them
    }
}

int FakeKernel::acquireVm(FakeProcess& p, kfd_ioctl_acquire_vm_args* a) {
    // kfd_ioctl_acquire_vm: the device by gpu_id, the drm file by fd, one VM per device.
    uint32_t actual = actualOf(p, a->gpu_id);
    if (!actual)
        return -EINVAL;
    auto drm = fileOf(static_cast<int>(a->drm_fd));
    if (!drm)
        return -EINVAL; // fget failed
    int minor = -1;
    for (const auto& [g, m] : gpus_)
        if (g == actual)
            minor = m;
    if (drm->kind != File::Render || drm->minor != minor)
        return -EINVAL; // amdgpu_amdkfd_gpuvm_acquire_process_vm: not this device's drm file
    auto have = p.vmOfGpu.find(actual);
    if (have != p.vmOfGpu.end())
        return have->second == drm.get() ? 0 : -EBUSY; // kfd_process_device_init_vm
    p.vmOfGpu[actual] = drm.get();
    return 0;
}

int FakeKernel::getApertures(FakeProcess& p, kfd_ioctl_get_process_apertures_new_args* a) {
    // kfd_ioctl_get_process_apertures_new: 0 nodes asks for the count; else fill that many.
    if (a->num_of_nodes == 0) {
        a->num_of_nodes = static_cast<uint32_t>(p.userOfActual.size());
        return 0;
    }
    if (!a->kfd_process_device_apertures_ptr)
        return -EFAULT;
    auto* out = reinterpret_cast<kfd_process_device_apertures*>(
        static_cast<uintptr_t>(a->kfd_process_device_apertures_ptr));
    uint32_t n = 0;
    for (const auto& [actual, user] : p.userOfActual) {
        if (n >= a->num_of_nodes)
            break;
        kfd_process_device_apertures ap{};
        // kfd_init_apertures_v9: LDS and scratch in the private apertures, GPUVM from
        // SVM_USER_BASE to the 47-bit hole.
        ap.lds_base = 0x1ull << 48;
        ap.lds_limit = ap.lds_base + 0xffffffffull;
        ap.scratch_base = 0x2ull << 48;
        ap.scratch_limit = ap.scratch_base + 0xffffffffull;
        ap.gpuvm_base = 0x1000000ull;
        ap.gpuvm_limit = (1ull << 47) - 1;
        ap.gpu_id = user;
        out[n++] = ap;
    }
    a->num_of_nodes = n;
    return 0;
}

int FakeKernel::allocMemory(FakeProcess& p, kfd_ioctl_alloc_memory_of_gpu_args* a) {
    // kfd_ioctl_alloc_memory_of_gpu
    uint32_t flags = a->flags;
    if (!a->size)
        return -EINVAL;
    uint32_t actual = actualOf(p, a->gpu_id);
    if (!actual)
        return -EINVAL;
    if (!p.vmOfGpu.count(actual))
        return -EINVAL; // "Invalid device"
    uint64_t mmapOffset = 0;
    if (flags & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL) {
        if (a->size != kDoorbellSlice)
            return -EINVAL;
        mmapOffset = kMmapDoorbell | mmapGpuId(a->gpu_id);
        if (int e = kfdPageOffset(p, kMmapDoorbell | mmapGpuId(actual), &mmapOffset))
            return e;
    } else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) {
        if (a->size != kPage)
            return -EINVAL;
        mmapOffset = kMmapMmio | mmapGpuId(a->gpu_id);
        if (int e = kfdPageOffset(p, kMmapMmio | mmapGpuId(actual), &mmapOffset))
            return e;
    } else if (flags & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
        if (a->mmap_offset & (kPage - 1))
            return -EINVAL; // the user address travels in mmap_offset
        mmapOffset = a->mmap_offset;
    } else {
        mmapOffset = nextMmapOffset_;
        nextMmapOffset_ += (a->size + kPage - 1) / kPage * kPage;
    }
    uint32_t idr = 0; // idr_alloc(&pdd->alloc_idr, mem, 0, 0): the lowest free handle
    for (bool taken = true; taken; ++idr) {
        taken = false;
        for (const auto& bo : p.bos)
            taken = taken || (bo->actualGpuId == actual && bo->privTag == idr);
        if (!taken)
            break;
    }
    auto bo = std::make_shared<FakeBo>();
    bo->addr = a->va_addr;
    bo->size = a->size;
    bo->mmapOffset = mmapOffset;
    bo->actualGpuId = actual;
    bo->allocFlags = flags;
    bo->privTag = idr;
    if (kfd::boHasContents(flags)) {
        bo->data.assign(a->size, std::byte{0});
        giveMemory(*bo);
    }
    p.bos.push_back(bo);
    a->handle = makeHandle(a->gpu_id, idr);
    a->mmap_offset = mmapOffset;
    return 0;
}

int FakeKernel::freeMemory(FakeProcess& p, kfd_ioctl_free_memory_of_gpu_args* a) {
    // kfd_ioctl_free_memory_of_gpu
    if (!actualOf(p, handleGpu(a->handle)))
        return -EINVAL;
    auto bo = boOfHandle(p, a->handle);
    if (!bo)
        return -EINVAL;
    p.bos.erase(std::find(p.bos.begin(), p.bos.end(), bo));
    return 0;
}

int FakeKernel::mapMemory(FakeProcess& p, kfd_ioctl_map_memory_to_gpu_args* a, bool map) {
    // kfd_ioctl_map_memory_to_gpu / kfd_ioctl_unmap_memory_from_gpu
    if (!a->n_devices || a->n_success > a->n_devices)
        return -EINVAL;
    if (!a->device_ids_array_ptr)
        return -EFAULT;
    if (!actualOf(p, handleGpu(a->handle)))
        return -EINVAL;
    auto bo = boOfHandle(p, a->handle);
    if (!bo)
        return -EINVAL;
    const auto* ids =
        reinterpret_cast<const uint32_t*>(static_cast<uintptr_t>(a->device_ids_array_ptr));
    for (uint32_t i = a->n_success; i < a->n_devices; ++i) {
        uint32_t actual = actualOf(p, ids[i]);
        if (!actual || !p.vmOfGpu.count(actual))
            return -EINVAL;
        if (map) {
            // amdgpu_vm_bo_map: the range must not overlap another mapping of that VM.
            for (const auto& other : p.bos)
                if (other != bo && other->mappedOn.count(actual) &&
                    other->addr < bo->addr + bo->size && bo->addr < other->addr + other->size)
                    return -EINVAL;
            bo->mappedOn.insert(actual);
        } else {
            if (!bo->mappedOn.count(actual))
                return -EINVAL; // amdgpu_amdkfd_gpuvm_unmap_memory_from_gpu: not mapped there
            bo->mappedOn.erase(actual);
        }
        a->n_success = i + 1;
    }
    return 0;
}

int FakeKernel::createQueue(FakeProcess& p, kfd_ioctl_create_queue_args* a) {
    // kfd_ioctl_create_queue -> set_queue_properties_from_user -> pqm_create_queue
    if (a->queue_percentage > KFD_MAX_QUEUE_PERCENTAGE ||
        a->queue_priority > KFD_MAX_QUEUE_PRIORITY)
        return -EINVAL;
    if (a->ring_base_address && !accessOk(a->ring_base_address, 8))
        return -EFAULT; // "Can't access ring base address"
    if (a->ring_size && (a->ring_size & (a->ring_size - 1)))
        return -EINVAL; // "Ring size must be a power of 2 or 0"
    if (!accessOk(a->read_pointer_address, 4) || !accessOk(a->write_pointer_address, 4) ||
        (a->eop_buffer_address && !accessOk(a->eop_buffer_address, 4)) ||
        (a->ctx_save_restore_address && !accessOk(a->ctx_save_restore_address, 4)))
        return -EFAULT;
    if (a->queue_type > KFD_IOC_QUEUE_TYPE_SDMA_XGMI)
        return -524; // ENOTSUPP
    uint32_t actual = actualOf(p, a->gpu_id);
    if (!actual)
        return -EINVAL; // "Could not find gpu id"
    if (!p.vmOfGpu.count(actual))
        return -ESRCH;
    if (p.queues.size() >= kMaxQueues)
        return -ENOMEM;
    FakeQueue q;
    for (bool taken = true; taken; ++q.id) { // find_first_zero_bit(pqm->queue_slot_bitmap)
        taken = std::any_of(p.queues.begin(), p.queues.end(),
                            [&](const FakeQueue& o) { return o.id == q.id; });
        if (!taken)
            break;
    }
    bool sdma =
        a->queue_type == KFD_IOC_QUEUE_TYPE_SDMA || a->queue_type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI;
    uint32_t doorbell = sdma ? kSdmaDoorbellBase : 0;
    for (bool taken = true; taken; ++doorbell) {
        taken = std::any_of(p.queues.begin(), p.queues.end(), [&](const FakeQueue& o) {
            return o.actualGpuId == actual && o.doorbellIndex == doorbell;
        });
        if (!sdma && doorbell == kSdmaDoorbellBase)
            taken = true; // compute queues skip the SDMA range
        if (!taken)
            break;
    }
    q.actualGpuId = actual;
    q.type = a->queue_type;
    q.percentage = a->queue_percentage;
    q.priority = a->queue_priority;
    q.ringBase = a->ring_base_address;
    q.ringSize = a->ring_size;
    q.writePtr = a->write_pointer_address;
    q.readPtr = a->read_pointer_address;
    q.eopBase = a->eop_buffer_address;
    q.eopSize = a->eop_buffer_size;
    q.ctxSave = a->ctx_save_restore_address;
    q.ctxSaveSize = a->ctx_save_restore_size;
    q.ctlStackSize = a->ctl_stack_size;
    q.doorbellIndex = doorbell;
    p.queues.push_back(q);
    a->queue_id = q.id;
    // SOC15: the doorbell's byte offset within the process's doorbell page
    uint64_t page = kMmapDoorbell | mmapGpuId(a->gpu_id);
    if (int e = kfdPageOffset(p, kMmapDoorbell | mmapGpuId(actual), &page)) {
        p.queues.pop_back();
        return e;
    }
    a->doorbell_offset = page | (static_cast<uint64_t>(doorbell) * kDoorbellBytes);
    return 0;
}

int FakeKernel::createEvent(FakeProcess& p, kfd_ioctl_create_event_args* a) {
    // kfd_ioctl_create_event -> kfd_event_create
    if (a->event_page_offset) {
        // dGPU: the event page is a BO of the process, named by its handle, set once.
        if (p.eventPageHandle)
            return -EINVAL; // "Event page is already set"
        uint32_t actual = actualOf(p, handleGpu(a->event_page_offset));
        if (!actual)
            return -EINVAL;
        if (!boOfHandle(p, a->event_page_offset))
            return -EINVAL; // "Event page offset is not valid"
        p.eventPageHandle = a->event_page_offset;
    }
    if (a->event_type > KFD_IOC_EVENT_MEMORY)
        return -EINVAL;
    FakeEvent e;
    e.type = a->event_type;
    e.autoReset = a->auto_reset != 0;
    bool signal = e.type == KFD_IOC_EVENT_SIGNAL || e.type == KFD_IOC_EVENT_DEBUG_EVENT;
    uint32_t first = signal ? 0 : kFirstNonsignalEvent;
    uint32_t limit = signal ? KFD_SIGNAL_EVENT_LIMIT : UINT32_MAX;
    for (e.id = first; e.id < limit; ++e.id)
        if (std::none_of(p.events.begin(), p.events.end(),
                         [&](const FakeEvent& o) { return o.id == e.id; }))
            break;
    if (e.id >= limit)
        return -ENOSPC;
    p.events.push_back(e);
    a->event_id = e.id;
    a->event_trigger_data = e.id;
    if (signal) {
        a->event_page_offset = p.eventPageHandle ? p.eventPageHandle : kMmapEvents;
        a->event_slot_index = e.id;
    }
    return 0;
}

int FakeKernel::waitEvents(FakeProcess& p, kfd_ioctl_wait_events_args* a) {
    // kfd_ioctl_wait_events -> kfd_wait_on_events: never sleeps here (nothing else signals a
    // fake event): a wait that is not satisfied at once times out.
    if (!a->num_events)
        return -EINVAL;
    if (!a->events_ptr)
        return -EFAULT;
    auto* data = reinterpret_cast<kfd_event_data*>(static_cast<uintptr_t>(a->events_ptr));
    std::vector<FakeEvent*> evs;
    for (uint32_t i = 0; i < a->num_events; ++i) {
        auto it = std::find_if(p.events.begin(), p.events.end(),
                               [&](const FakeEvent& e) { return e.id == data[i].event_id; });
        if (it == p.events.end())
            return -EINVAL;
        evs.push_back(&*it);
    }
    size_t signaled = static_cast<size_t>(
        std::count_if(evs.begin(), evs.end(), [](const FakeEvent* e) { return e->signaled; }));
    bool done = a->wait_for_all ? signaled == evs.size() : signaled > 0;
    a->wait_result = done ? KFD_IOC_WAIT_RESULT_COMPLETE : KFD_IOC_WAIT_RESULT_TIMEOUT;
    if (done)
        for (FakeEvent* e : evs)
            if (e->signaled && e->autoReset)
                e->signaled = false;
    return 0;
}

// ------------------------------------------------------------------------------ mmap

intptr_t FakeKernel::mmap(void* addr, size_t len, int prot, int flags, int fd, uint64_t offset) {
    MemoryRegion region;
    if (int r = mappingOf(fd, len, offset, &region); r < 0)
        return r;
    void* r = ::mmap(addr, len, prot, flags, region.fd, static_cast<off_t>(region.base));
    return r == MAP_FAILED ? -errno : reinterpret_cast<intptr_t>(r);
}

namespace {
/// What kfd_mmap lets a process map of a kfd page of type `type`: its doorbell slice, one MMIO
/// page; nothing else (a dGPU process's event page is a BO of its own).
uint64_t kfdPageLimit(uint64_t type) {
    return type == kMmapDoorbell ? kDoorbellSlice : type == kMmapMmio ? kPage : 0;
}
} // namespace

int FakeKernel::kfdPageOf(FakeProcess& p, uint64_t key, uint64_t limit, MemoryRegion* out) {
    auto page = p.kfdPages.find(key);
    if (page == p.kfdPages.end()) {
        if (!placement_)
            placement_ = std::make_shared<MemfdPlacement>();
        MemoryRegion made;
        if (int r = placement_->placeKfdPage(limit, &made); r < 0)
            return r;
        page = p.kfdPages.emplace(key, made).first;
    }
    *out = page->second;
    return 0;
}

int FakeKernel::kfdPageOffset(FakeProcess& p, uint64_t key, uint64_t* offset) {
    if (!placement_ || !placement_->kfdOffsetsAreItsOwn())
        return 0;
    MemoryRegion region;
    if (int r = kfdPageOf(p, key, kfdPageLimit(key & (3ull << kMmapTypeShift)), &region); r < 0)
        return r;
    *offset = region.base;
    return 0;
}

bool FakeKernel::doorbellOf(const FakeProcess& p, const FakeQueue& q, MemoryRegion* out) {
    auto page = p.kfdPages.find(kMmapDoorbell | mmapGpuId(q.actualGpuId));
    if (page == p.kfdPages.end())
        return false;
    *out = page->second;
    out->base += static_cast<uint64_t>(q.doorbellIndex) * kDoorbellBytes;
    out->owned = false;
    return true;
}

int FakeKernel::mappingOf(int fd, size_t len, uint64_t offset, MemoryRegion* out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto f = fileOf(fd);
    if (!f)
        return -EBADF;
    if (f->kind == File::Kfd && placement_ && placement_->kfdOffsetsAreItsOwn()) {
        // The driver's offsets: a page of the process is mapped at the offset it lies at.
        for (const auto& [key, region] : f->proc->kfdPages) {
            uint64_t type = key & (3ull << kMmapTypeShift);
            if (region.base != offset)
                continue;
            if (len > kfdPageLimit(type) || (type == kMmapMmio && len != kPage))
                return -EINVAL;
            *out = region;
            return 0;
        }
        return -EINVAL;
    }
    if (f->kind == File::Kfd) {
        // kfd_mmap: the type and gpu_id are in the offset's high bits.
        FakeProcess& p = *f->proc;
        // kfd_device_by_id: the gpu_id in the offset is the device's own (actual) one.
        uint64_t type = offset & (3ull << kMmapTypeShift);
        uint32_t inOffset = static_cast<uint32_t>((offset >> kMmapGpuIdShift) & 0xffff);
        uint32_t actual = 0;
        for (const auto& [a, u] : p.userOfActual)
            if ((a & 0xffff) == inOffset)
                actual = a;
        // kfd_doorbell_mmap: at most the process's doorbell slice; kfd_mmio_mmap: one page.
        uint64_t limit = kfdPageLimit(type);
        if (!actual || !limit || len > limit || (type == kMmapMmio && len != kPage))
            return -EINVAL; // events: a dGPU process's event page is its own BO
        return kfdPageOf(p, type | mmapGpuId(actual), limit, out);
    }
    if (f->kind != File::Render)
        return -ENODEV;
    // amdgpu's GEM mmap: the BO whose fake offset is `offset`, on this device.
    uint32_t gpu = 0;
    for (const auto& [g, m] : gpus_)
        if (m == f->minor)
            gpu = g;
    std::shared_ptr<FakeBo> hit;
    for (const auto& [pid, p] : processes_)
        for (const auto& bo : p->bos)
            if (bo->actualGpuId == gpu && bo->mmapOffset == offset && bo->mem.fd >= 0 &&
                !(bo->allocFlags &
                  (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_USERPTR)))
                hit = bo;
    if (!hit)
        return -EINVAL;
    if (len > (hit->size + kPage - 1) / kPage * kPage)
        return -EINVAL;
    *out = hit->mem;
    return 0;
}

} // namespace fakekfd
