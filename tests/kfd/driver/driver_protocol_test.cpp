// The driver's protocol: frames that do not decode are refused, the user buffers and fd fields
// of each ioctl are found as the kernel functions copy them, and the driver refuses an ioctl whose
// buffers do not match its struct.
#include "driver_server.h"
#include "kfd/driver_protocol.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <linux/kfd_ioctl.h>

#include <cstring>

namespace {

using kfddriver::IoctlBuffer;
using kfddriver::Message;

Message sample() {
    Message m;
    m.op = static_cast<uint32_t>(kfddriver::Op::Ioctl);
    m.pid = 4242;
    m.file = 1003;
    m.a = AMDKFD_IOC_CRIU_OP;
    m.b = 7;
    m.text = std::string("\0struct\xff", 8);
    m.buffers = {"one", std::string(), std::string(300, 'x')};
    return m;
}

TEST(KfdDriverProtocol, AMessageDecodesAsItWasAndNoTruncationOrTrailingByteDoes) {
    std::string bytes = kfddriver::encode(sample());
    Message back;
    ASSERT_TRUE(kfddriver::decode(bytes, &back));
    EXPECT_EQ(sample().op, back.op);
    EXPECT_EQ(sample().pid, back.pid);
    EXPECT_EQ(sample().file, back.file);
    EXPECT_EQ(sample().a, back.a);
    EXPECT_EQ(sample().b, back.b);
    EXPECT_EQ(sample().text, back.text);
    EXPECT_EQ(sample().buffers, back.buffers);
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_FALSE(kfddriver::decode(bytes.substr(0, n), &back)) << "cut at " << n;
    EXPECT_FALSE(kfddriver::decode(bytes + "!", &back));
}

TEST(KfdDriverProtocol, TheBuffersOfACriuOpAreItsBucketsAndPrivateData) {
    std::vector<uint8_t> devices(64), bos(256), priv(100);
    kfd_ioctl_criu_args a{};
    a.devices = reinterpret_cast<uintptr_t>(devices.data());
    a.bos = reinterpret_cast<uintptr_t>(bos.data());
    a.priv_data = reinterpret_cast<uintptr_t>(priv.data());
    a.priv_data_size = priv.size();
    a.num_devices = 2;
    a.num_bos = 3;
    auto b = kfddriver::driverIoctlBuffers(AMDKFD_IOC_CRIU_OP, &a, sizeof(a));
    ASSERT_EQ(3u, b.size());
    EXPECT_EQ(offsetof(kfd_ioctl_criu_args, devices), b[0].pointerField);
    EXPECT_EQ(2 * sizeof(kfd_criu_device_bucket), b[0].length);
    EXPECT_EQ(offsetof(kfd_ioctl_criu_args, bos), b[1].pointerField);
    EXPECT_EQ(3 * sizeof(kfd_criu_bo_bucket), b[1].length);
    EXPECT_EQ(offsetof(kfd_ioctl_criu_args, priv_data), b[2].pointerField);
    EXPECT_EQ(100u, b[2].length);
    // PROCESS_INFO passes no pointers: nothing is copied.
    kfd_ioctl_criu_args info{};
    info.num_devices = 2;
    EXPECT_TRUE(kfddriver::driverIoctlBuffers(AMDKFD_IOC_CRIU_OP, &info, sizeof(info)).empty());
    // A caller's struct too short to hold a pointer field has no buffer there.
    EXPECT_TRUE(kfddriver::driverIoctlBuffers(AMDKFD_IOC_CRIU_OP, &a, 8).empty());
}

/// The one buffer of ioctl `request` with struct `arg`: its length (0 when it has not exactly one).
template <typename Args> uint64_t onlyBufferLength(unsigned long request, const Args& arg) {
    auto b = kfddriver::driverIoctlBuffers(request, &arg, sizeof(arg));
    EXPECT_EQ(1u, b.size());
    return b.size() == 1 ? b[0].length : 0;
}

TEST(KfdDriverProtocol, TheBuffersOfTheRuntimeIoctlsFollowTheirCounts) {
    std::vector<uint32_t> ids(3);
    kfd_ioctl_map_memory_to_gpu_args map{};
    map.device_ids_array_ptr = reinterpret_cast<uintptr_t>(ids.data());
    map.n_devices = 3;
    EXPECT_EQ(12u, onlyBufferLength(AMDKFD_IOC_MAP_MEMORY_TO_GPU, map));
    EXPECT_EQ(12u, onlyBufferLength(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, map));

    std::vector<kfd_process_device_apertures> apertures(4);
    kfd_ioctl_get_process_apertures_new_args ap{};
    ap.kfd_process_device_apertures_ptr = reinterpret_cast<uintptr_t>(apertures.data());
    ap.num_of_nodes = 4;
    EXPECT_EQ(4 * sizeof(kfd_process_device_apertures),
              onlyBufferLength(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, ap));

    std::vector<kfd_event_data> events(2);
    kfd_ioctl_wait_events_args wait{};
    wait.events_ptr = reinterpret_cast<uintptr_t>(events.data());
    wait.num_events = 2;
    EXPECT_EQ(2 * sizeof(kfd_event_data), onlyBufferLength(AMDKFD_IOC_WAIT_EVENTS, wait));

    // Commands whose kernel function copies no user memory, and other drivers' ioctls.
    kfd_ioctl_create_queue_args queue{};
    queue.ring_base_address = 0x1000;
    EXPECT_TRUE(
        kfddriver::driverIoctlBuffers(AMDKFD_IOC_CREATE_QUEUE, &queue, sizeof(queue)).empty());
    EXPECT_TRUE(kfddriver::driverIoctlBuffers(_IOWR('d', 0x00, kfd_ioctl_criu_args), &map,
                                              sizeof(kfd_ioctl_criu_args))
                    .empty());
}

TEST(KfdDriverProtocol, OnlyAcquireVmCarriesAnFdOfTheCaller) {
    EXPECT_EQ(
        std::vector<size_t>{offsetof(kfd_ioctl_acquire_vm_args, drm_fd)},
        kfddriver::driverIoctlFdFields(AMDKFD_IOC_ACQUIRE_VM, sizeof(kfd_ioctl_acquire_vm_args)));
    EXPECT_TRUE(kfddriver::driverIoctlFdFields(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU,
                                               sizeof(kfd_ioctl_alloc_memory_of_gpu_args))
                    .empty());
}

TEST(KfdDriverServer, AnIoctlWhoseBuffersDoNotMatchItsStructIsRefused) {
    testsupport::TempDir dir;
    int loop = -1;
    {
        std::string error;
        kfddriver::DriverServer server(dir.path(), kfddriver::MachineSpec{}, &error);
        ASSERT_EQ("", error);
        loop = server.loopIndex();
        EXPECT_TRUE(kfddriver::loopAttached(loop));
        Message open;
        open.op = static_cast<uint32_t>(kfddriver::Op::Open);
        open.pid = 77;
        open.text = "/dev/kfd";
        Message opened = server.handle(open);
        ASSERT_EQ(0, opened.pid);
        EXPECT_EQ(kfddriver::filesPath(dir.path()) + "/" + std::to_string(opened.file) + "/kfd",
                  opened.text);

        std::vector<uint32_t> ids(4);
        kfd_ioctl_map_memory_to_gpu_args map{};
        map.handle = 1;
        map.device_ids_array_ptr = reinterpret_cast<uintptr_t>(ids.data());
        map.n_devices = 4; // 16 bytes the driver would read
        Message call;
        call.op = static_cast<uint32_t>(kfddriver::Op::Ioctl);
        call.pid = 77;
        call.file = opened.file;
        call.a = AMDKFD_IOC_MAP_MEMORY_TO_GPU;
        call.text.assign(reinterpret_cast<const char*>(&map), sizeof(map));
        call.buffers = {std::string(8, '\0')}; // the client sent 8
        EXPECT_EQ(-EFAULT, server.handle(call).pid);
        call.buffers.clear(); // or none
        EXPECT_EQ(-EFAULT, server.handle(call).pid);
        // With the 16 bytes, the call reaches the fake, which knows no BO of that handle.
        call.buffers = {std::string(16, '\0')};
        EXPECT_EQ(-EINVAL, server.handle(call).pid);
    }
    EXPECT_TRUE(kfddriver::loopDetachedWithin(loop, 5000)) << "loop device " << loop;
}

} // namespace

namespace {

TEST(KfdDriverProtocol, QueuesAndEventsDecodeAsTheyWereAndNoTruncationOrTrailingByteDoes) {
    kfddriver::QueueInfo q;
    q.ringBase = 0x7f0000001000;
    q.ringSize = 65536;
    q.doorbellMemoryOffset = 1ull << 38;
    q.id = 1;
    q.gpuId = 0x1000;
    q.type = KFD_IOC_QUEUE_TYPE_SDMA;
    q.doorbellIndex = 0x100;
    std::string bytes = kfddriver::encodeQueues({q, kfddriver::QueueInfo{}});
    std::vector<kfddriver::QueueInfo> queues;
    ASSERT_TRUE(kfddriver::decodeQueues(bytes, &queues));
    ASSERT_EQ(2u, queues.size());
    EXPECT_EQ(0, memcmp(&q, &queues[0], sizeof(q)));
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_FALSE(kfddriver::decodeQueues(bytes.substr(0, n), &queues)) << "cut at " << n;
    EXPECT_FALSE(kfddriver::decodeQueues(bytes + "!", &queues));

    std::vector<kfddriver::EventInfo> events;
    bytes = kfddriver::encodeEvents({{7, KFD_IOC_EVENT_SIGNAL, 1, 0}});
    ASSERT_TRUE(kfddriver::decodeEvents(bytes, &events));
    ASSERT_EQ(1u, events.size());
    EXPECT_EQ(7u, events[0].id);
    EXPECT_EQ(1u, events[0].autoReset);
    // A count of more records than the frame could hold is refused before anything is made.
    std::string huge(bytes);
    uint64_t count = ~0ull / 2;
    memcpy(huge.data(), &count, sizeof(count));
    EXPECT_FALSE(kfddriver::decodeEvents(huge, &events));
}

} // namespace
