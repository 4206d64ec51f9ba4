// The fake KFD's ioctls called directly (the runtime ones libhsakmt issues, and CRIU ops), held to
// the checks of Linux 6.1's kfd_chardev.c; each test names the kernel function it mirrors.
#include "kfd_test_machine.h"

#include <gtest/gtest.h>

#include <sys/mman.h>

using namespace fakekfd;

namespace {

constexpr int kPid = 4242;

/// A process that opened /dev/kfd and the render node of each GPU on a 2-GPU machine.
struct Opened {
    TestMachine m{machineSpec(2, 0x1000, 128)};
    FakeKernel& k = *m.kernel;
    int kfd = -1;
    int render[2] = {-1, -1};

    Opened() {
        k.setCurrentPid(kPid);
        kfd = k.taskOpen(k.kfdPath(), O_RDWR);
        for (int i = 0; i < 2; ++i)
            render[i] = k.taskOpen(k.renderPath(128 + i), O_RDWR);
    }
    int acquire(int gpu, int drmFd) {
        kfd_ioctl_acquire_vm_args a{};
        a.gpu_id = gpuId(gpu);
        a.drm_fd = static_cast<uint32_t>(drmFd);
        return k.ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &a);
    }
    uint32_t gpuId(int gpu) const { return m.topology.gpus()[static_cast<size_t>(gpu)]->gpuId; }
    int alloc(int gpu, uint64_t va, uint64_t size, uint32_t flags, uint64_t* handle) {
        kfd_ioctl_alloc_memory_of_gpu_args a{};
        a.gpu_id = gpuId(gpu);
        a.va_addr = va;
        a.size = size;
        a.flags = flags;
        int r = k.ioctl(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a);
        *handle = a.handle;
        return r;
    }
    int map(uint64_t handle, std::vector<uint32_t> ids, uint32_t* nSuccess = nullptr) {
        kfd_ioctl_map_memory_to_gpu_args a{};
        a.handle = handle;
        a.device_ids_array_ptr = reinterpret_cast<uint64_t>(ids.data());
        a.n_devices = static_cast<uint32_t>(ids.size());
        int r = k.ioctl(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &a);
        if (nSuccess)
            *nSuccess = a.n_success;
        return r;
    }
};

kfd_ioctl_create_queue_args queueArgs(uint32_t gpuId, uint64_t* ring) {
    kfd_ioctl_create_queue_args q{};
    q.gpu_id = gpuId;
    q.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL;
    q.ring_base_address = reinterpret_cast<uint64_t>(ring);
    q.ring_size = 4096;
    q.read_pointer_address = reinterpret_cast<uint64_t>(ring + 1);
    q.write_pointer_address = reinterpret_cast<uint64_t>(ring + 2);
    q.queue_percentage = 100;
    return q;
}

} // namespace

TEST(KfdRuntimeIoctls, GivenNoVm_WhenMemoryIsAllocated_ThenEinvalAsKfdIoctlAllocMemoryOfGpu) {
    Opened o;
    uint64_t h = 0;
    EXPECT_EQ(-EINVAL, o.alloc(0, 0x100000, 4096, kVram, &h));
    ASSERT_EQ(0, o.acquire(0, o.render[0]));
    EXPECT_EQ(0, o.alloc(0, 0x100000, 4096, kVram, &h));
    EXPECT_EQ(h >> 32, o.gpuId(0)) << "MAKE_HANDLE(gpu_id, idr)";
    EXPECT_EQ(-EINVAL, o.alloc(0, 0x200000, 0, kVram, &h)) << "size 0";
}

TEST(KfdRuntimeIoctls,
     GivenAcquireVm_WhenTheFileIsAnotherGpusOrChanges_ThenEinvalOrEbusyAsKfdIoctlAcquireVm) {
    Opened o;
    EXPECT_EQ(-EINVAL, o.acquire(0, o.render[1])) << "another device's drm file";
    EXPECT_EQ(-EINVAL, o.acquire(0, 77777)) << "no such fd";
    ASSERT_EQ(0, o.acquire(0, o.render[0]));
    EXPECT_EQ(0, o.acquire(0, o.render[0])) << "the same file again";
    int other = o.k.taskOpen(o.k.renderPath(128), O_RDWR);
    EXPECT_EQ(-EBUSY, o.acquire(0, other)) << "kfd_process_device_init_vm: a VM already";
}

TEST(KfdRuntimeIoctls,
     GivenDoorbellAndMmioBos_WhenTheSizeIsWrong_ThenEinvalAndTheOffsetNamesTypeAndGpu) {
    Opened o;
    ASSERT_EQ(0, o.acquire(1, o.render[1]));
    uint64_t h = 0;
    EXPECT_EQ(-EINVAL, o.alloc(1, 0x100000, 4096, kDoorbell, &h)) << "not the doorbell slice";
    kfd_ioctl_alloc_memory_of_gpu_args a{};
    a.gpu_id = o.gpuId(1);
    a.va_addr = 0x100000;
    a.size = 8192;
    a.flags = kDoorbell;
    ASSERT_EQ(0, o.k.ioctl(o.kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a));
    EXPECT_EQ(a.mmap_offset, (3ull << 62) | (uint64_t{o.gpuId(1)} << 46));
    EXPECT_EQ(-EINVAL, o.alloc(1, 0x300000, 8192, kMmio, &h)) << "MMIO remap is one page";
}

TEST(KfdRuntimeIoctls,
     GivenMapMemoryToGpu_WhenCountsOrRangesAreBad_ThenEinvalAsKfdIoctlMapMemoryToGpu) {
    Opened o;
    ASSERT_EQ(0, o.acquire(0, o.render[0]));
    uint64_t a = 0, b = 0;
    ASSERT_EQ(0, o.alloc(0, 0x100000, 0x2000, kVram, &a));
    ASSERT_EQ(0, o.alloc(0, 0x101000, 0x2000, kVram, &b)); // overlaps a's range
    EXPECT_EQ(-EINVAL, o.map(a, {})) << "n_devices 0";
    EXPECT_EQ(-EINVAL, o.map(a, {0xdead})) << "unknown gpu_id";
    EXPECT_EQ(-EINVAL, o.map(a ^ 0x7, {o.gpuId(0)})) << "unknown handle";
    uint32_t n = 0;
    EXPECT_EQ(-EINVAL, o.map(a, {o.gpuId(0), o.gpuId(1)}, &n)) << "GPU 1 has no VM";
    EXPECT_EQ(n, 1u) << "n_success counts the devices done";
    EXPECT_EQ(-EINVAL, o.map(b, {o.gpuId(0)})) << "amdgpu_vm_bo_map: overlapping mapping";
    kfd_ioctl_unmap_memory_from_gpu_args u{};
    uint32_t id = o.gpuId(0);
    u.handle = a;
    u.device_ids_array_ptr = reinterpret_cast<uint64_t>(&id);
    u.n_devices = 1;
    ASSERT_EQ(0, o.k.ioctl(o.kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &u));
    EXPECT_EQ(0, o.map(b, {o.gpuId(0)}));
}

TEST(KfdRuntimeIoctls,
     GivenCreateQueue_WhenArgumentsAreBad_ThenErrorsAsSetQueuePropertiesFromUser) {
    Opened o;
    ASSERT_EQ(0, o.acquire(0, o.render[0]));
    uint64_t ring[8] = {};
    auto q = queueArgs(o.gpuId(0), ring);
    q.ring_size = 3000;
    EXPECT_EQ(-EINVAL, o.k.ioctl(o.kfd, AMDKFD_IOC_CREATE_QUEUE, &q))
        << "ring size not a power of 2";
    q = queueArgs(o.gpuId(0), ring);
    q.queue_priority = 16;
    EXPECT_EQ(-EINVAL, o.k.ioctl(o.kfd, AMDKFD_IOC_CREATE_QUEUE, &q));
    q = queueArgs(o.gpuId(0), ring);
    q.ring_base_address = 0xffff888000000000ull;
    EXPECT_EQ(-EFAULT, o.k.ioctl(o.kfd, AMDKFD_IOC_CREATE_QUEUE, &q)) << "a kernel address";
    q = queueArgs(o.gpuId(1), ring);
    EXPECT_EQ(-ESRCH, o.k.ioctl(o.kfd, AMDKFD_IOC_CREATE_QUEUE, &q)) << "GPU 1 has no VM";
    q = queueArgs(o.gpuId(0), ring);
    ASSERT_EQ(0, o.k.ioctl(o.kfd, AMDKFD_IOC_CREATE_QUEUE, &q));
    auto second = queueArgs(o.gpuId(0), ring);
    ASSERT_EQ(0, o.k.ioctl(o.kfd, AMDKFD_IOC_CREATE_QUEUE, &second));
    EXPECT_NE(q.queue_id, second.queue_id);
    EXPECT_NE(q.doorbell_offset, second.doorbell_offset);
    kfd_ioctl_destroy_queue_args d{};
    d.queue_id = 99;
    EXPECT_EQ(-EINVAL, o.k.ioctl(o.kfd, AMDKFD_IOC_DESTROY_QUEUE, &d));
    kfd_ioctl_set_xnack_mode_args x{};
    x.xnack_enabled = 0;
    EXPECT_EQ(-EBUSY, o.k.ioctl(o.kfd, AMDKFD_IOC_SET_XNACK_MODE, &x)) << "queues present";
}

TEST(KfdRuntimeIoctls, GivenAnEventPage_WhenSetTwiceOrNotABo_ThenEinvalAsKfdEventPageSet) {
    Opened o;
    ASSERT_EQ(0, o.acquire(0, o.render[0]));
    uint64_t page = 0;
    ASSERT_EQ(0, o.alloc(0, 0x100000, 4096, kGtt, &page));
    kfd_ioctl_create_event_args e{};
    e.event_type = KFD_IOC_EVENT_SIGNAL;
    e.event_page_offset = page + 1; // no such BO
    EXPECT_EQ(-EINVAL, o.k.ioctl(o.kfd, AMDKFD_IOC_CREATE_EVENT, &e));
    e.event_page_offset = page;
    ASSERT_EQ(0, o.k.ioctl(o.kfd, AMDKFD_IOC_CREATE_EVENT, &e));
    EXPECT_EQ(e.event_slot_index, e.event_id);
    kfd_ioctl_create_event_args again{};
    again.event_page_offset = page;
    EXPECT_EQ(-EINVAL, o.k.ioctl(o.kfd, AMDKFD_IOC_CREATE_EVENT, &again))
        << "Event page is already set";
}

TEST(KfdRuntimeIoctls, GivenAnotherProcess_WhenItUsesTheFile_ThenEbadfAndUnknownIoctlsAreRecorded) {
    Opened o;
    kfd_ioctl_get_process_apertures_new_args ap{};
    ASSERT_EQ(0, o.k.ioctl(o.kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &ap));
    EXPECT_EQ(ap.num_of_nodes, 2u);
    o.k.setCurrentPid(kPid + 1);
    EXPECT_EQ(-EBADF, o.k.ioctl(o.kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &ap));
    o.k.setCurrentPid(kPid);
    kfd_ioctl_get_tile_config_args t{};
    EXPECT_EQ(-ENOTTY, o.k.ioctl(o.kfd, AMDKFD_IOC_GET_TILE_CONFIG, &t));
    EXPECT_EQ(o.k.unservedIoctls(), std::vector<unsigned long>{AMDKFD_IOC_GET_TILE_CONFIG});
}

TEST(KfdCriuOps,
     GivenProcessInfoTwice_ThenEachEvictsAndOneUnpauseLeavesQueuesEvictedAsKfdProcessEvictQueues) {
    TestMachine m(machineSpec(1));
    ProcessSpec spec;
    spec.bos = {{0, 4096, kVram}};
    FakeProcess& p = m.kernel->addProcess(171, spec);
    m.kernel->setCurrentPid(171);
    kfd_ioctl_criu_args a{};
    a.op = KFD_CRIU_OP_PROCESS_INFO;
    m.kernel->seize(171);
    int kfd = m.kernel->criuCopyOf(171, 3); // the task's /dev/kfd, as criu holds it
    ASSERT_EQ(0, m.kernel->ioctl(kfd, AMDKFD_IOC_CRIU_OP, &a));
    kfd_ioctl_criu_args b{};
    b.op = KFD_CRIU_OP_PROCESS_INFO;
    ASSERT_EQ(0, m.kernel->ioctl(kfd, AMDKFD_IOC_CRIU_OP, &b));
    EXPECT_EQ(a.num_bos, b.num_bos);
    EXPECT_EQ(a.priv_data_size, b.priv_data_size);
    EXPECT_EQ(p.evictions, 2);
    kfd_ioctl_criu_args u{};
    u.op = KFD_CRIU_OP_UNPAUSE;
    EXPECT_EQ(0, m.kernel->ioctl(kfd, AMDKFD_IOC_CRIU_OP, &u));
    EXPECT_EQ(p.evictions, 1) << "kfd_process_restore_queues undoes one eviction";
    EXPECT_EQ(-EINVAL, m.kernel->ioctl(kfd, AMDKFD_IOC_CRIU_OP, &u)) << "criu_unpause: not paused";
    kfd_ioctl_criu_args bad{};
    bad.op = KFD_CRIU_OP_RESUME + 1;
    EXPECT_EQ(-EINVAL, m.kernel->ioctl(kfd, AMDKFD_IOC_CRIU_OP, &bad))
        << "Unsupported CRIU operation";
}
