// kfd-driver-radv-client: what a Vulkan program does first, on Mesa's RADV (Debian's
// mesa-vulkan-drivers) over the driver's render node (radv_test.sh runs it preloaded with the
// driver's interposer): it enumerates the GPU, creates a device on a compute queue, writes host-
// visible memory and reads it back through a second mapping, submits a batch that signals a
// fence and waits for it, then signals a semaphore in one batch and waits for it in another, and
// exports the fence as a sync file (VK_KHR_external_fence_fd), which it polls and asks about
// (SYNC_IOC_FILE_INFO) as an fd of its own. Each step prints one line; the first that fails
// prints "FAIL STEP: VkResult" and ends the program with status 1. With --fill it then records
// vkCmdFillBuffer on the compute queue and submits it, and prints what became of it.
#include <vulkan/vulkan.h>

#include <linux/sync_file.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kFiveSeconds = 5'000'000'000ull;
constexpr VkDeviceSize kBytes = 1 << 20;

/// Whether `r` is VK_SUCCESS; else says which step failed.
bool ok(VkResult r, const char* step) {
    if (r == VK_SUCCESS)
        return true;
    printf("FAIL %s: %d\n", step, static_cast<int>(r));
    return false;
}

/// The first queue family with compute and without graphics (RADV's compute rings), else the
/// first with compute.
uint32_t computeFamily(VkPhysicalDevice gpu) {
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(gpu, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(gpu, &count, families.data());
    uint32_t any = UINT32_MAX;
    for (uint32_t i = 0; i < count; ++i) {
        VkQueueFlags flags = families[i].queueFlags;
        printf("queue family %u flags 0x%x count %u\n", i, flags, families[i].queueCount);
        if ((flags & VK_QUEUE_COMPUTE_BIT) && !(flags & VK_QUEUE_GRAPHICS_BIT))
            return i;
        if ((flags & VK_QUEUE_COMPUTE_BIT) && any == UINT32_MAX)
            any = i;
    }
    return any;
}

class Client {
public:
    ~Client() {
        if (device_) {
            vkDeviceWaitIdle(device_);
            if (pool_)
                vkDestroyCommandPool(device_, pool_, nullptr);
            if (buffer_)
                vkDestroyBuffer(device_, buffer_, nullptr);
            if (memory_)
                vkFreeMemory(device_, memory_, nullptr);
            vkDestroyDevice(device_, nullptr);
        }
        if (instance_)
            vkDestroyInstance(instance_, nullptr);
    }

    bool createDevice() {
        VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
        app.pApplicationName = "kfd-driver-radv-client";
        app.apiVersion = VK_API_VERSION_1_1;
        VkInstanceCreateInfo instance{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
        instance.pApplicationInfo = &app;
        if (!ok(vkCreateInstance(&instance, nullptr, &instance_), "instance"))
            return false;
        uint32_t count = 1;
        VkResult r = vkEnumeratePhysicalDevices(instance_, &count, &gpu_);
        if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || count == 0)
            return ok(r == VK_SUCCESS ? VK_ERROR_INITIALIZATION_FAILED : r, "enumerate");
        VkPhysicalDeviceProperties properties;
        vkGetPhysicalDeviceProperties(gpu_, &properties);
        printf("device %s\n", properties.deviceName);
        family_ = computeFamily(gpu_);
        if (family_ == UINT32_MAX)
            return ok(VK_ERROR_FEATURE_NOT_PRESENT, "compute queue family");
        float priority = 1;
        VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
        queue.queueFamilyIndex = family_;
        queue.queueCount = 1;
        queue.pQueuePriorities = &priority;
        const char* extensions[] = {VK_KHR_EXTERNAL_FENCE_FD_EXTENSION_NAME};
        VkDeviceCreateInfo device{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
        device.queueCreateInfoCount = 1;
        device.pQueueCreateInfos = &queue;
        device.enabledExtensionCount = 1;
        device.ppEnabledExtensionNames = extensions;
        if (!ok(vkCreateDevice(gpu_, &device, nullptr, &device_), "device"))
            return false;
        vkGetDeviceQueue(device_, family_, 0, &queue_);
        printf("device created on queue family %u\n", family_);
        return true;
    }

    /// Host-visible memory written through one mapping and read back through another.
    bool writeAndReadMemory() {
        VkBufferCreateInfo buffer{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
        buffer.size = kBytes;
        buffer.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
        if (!ok(vkCreateBuffer(device_, &buffer, nullptr, &buffer_), "buffer"))
            return false;
        VkMemoryRequirements needs;
        vkGetBufferMemoryRequirements(device_, buffer_, &needs);
        VkPhysicalDeviceMemoryProperties types;
        vkGetPhysicalDeviceMemoryProperties(gpu_, &types);
        constexpr VkMemoryPropertyFlags kHost =
            VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        uint32_t type = UINT32_MAX;
        for (uint32_t i = 0; i < types.memoryTypeCount && type == UINT32_MAX; ++i)
            if ((needs.memoryTypeBits & (1u << i)) &&
                (types.memoryTypes[i].propertyFlags & kHost) == kHost)
                type = i;
        if (type == UINT32_MAX)
            return ok(VK_ERROR_FEATURE_NOT_PRESENT, "host-visible memory type");
        VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        allocate.allocationSize = needs.size;
        allocate.memoryTypeIndex = type;
        if (!ok(vkAllocateMemory(device_, &allocate, nullptr, &memory_), "allocate") ||
            !ok(vkBindBufferMemory(device_, buffer_, memory_, 0), "bind"))
            return false;
        void* first = nullptr;
        if (!ok(vkMapMemory(device_, memory_, 0, VK_WHOLE_SIZE, 0, &first), "map"))
            return false;
        auto* bytes = static_cast<uint8_t*>(first);
        for (VkDeviceSize i = 0; i < kBytes; ++i)
            bytes[i] = static_cast<uint8_t>(i * 7 + 3);
        vkUnmapMemory(device_, memory_);
        void* second = nullptr;
        if (!ok(vkMapMemory(device_, memory_, 0, VK_WHOLE_SIZE, 0, &second), "map again"))
            return false;
        bytes = static_cast<uint8_t*>(second);
        VkDeviceSize same = 0;
        for (VkDeviceSize i = 0; i < kBytes; ++i)
            same += bytes[i] == static_cast<uint8_t>(i * 7 + 3);
        printf("memory read back %llu of %llu bytes\n", static_cast<unsigned long long>(same),
               static_cast<unsigned long long>(kBytes));
        mapped_ = bytes;
        return same == kBytes;
    }

    /// A batch that signals a fence, waited for; then a semaphore signaled by one batch and
    /// waited for by the next.
    bool submitAndWait() {
        VkFenceCreateInfo fenceInfo{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        VkExportFenceCreateInfo exportable{VK_STRUCTURE_TYPE_EXPORT_FENCE_CREATE_INFO};
        exportable.handleTypes = VK_EXTERNAL_FENCE_HANDLE_TYPE_SYNC_FD_BIT;
        fenceInfo.pNext = &exportable;
        if (!ok(vkCreateFence(device_, &fenceInfo, nullptr, &fence_), "fence"))
            return false;
        VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        if (!ok(vkQueueSubmit(queue_, 1, &submit, fence_), "submit") ||
            !ok(vkWaitForFences(device_, 1, &fence_, VK_TRUE, kFiveSeconds), "wait"))
            return false;
        if (!ok(vkGetFenceStatus(device_, fence_), "fence status"))
            return false;
        printf("submit fence signaled\n");

        VkSemaphoreCreateInfo semaphoreInfo{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
        VkSemaphore semaphore;
        if (!ok(vkCreateSemaphore(device_, &semaphoreInfo, nullptr, &semaphore), "semaphore"))
            return false;
        VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT;
        VkSubmitInfo signal{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        signal.signalSemaphoreCount = 1;
        signal.pSignalSemaphores = &semaphore;
        VkSubmitInfo wait{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        wait.waitSemaphoreCount = 1;
        wait.pWaitSemaphores = &semaphore;
        wait.pWaitDstStageMask = &stage;
        bool done = ok(vkResetFences(device_, 1, &fence_), "reset fence") &&
                    ok(vkQueueSubmit(queue_, 1, &signal, VK_NULL_HANDLE), "submit signal") &&
                    ok(vkQueueSubmit(queue_, 1, &wait, fence_), "submit wait") &&
                    ok(vkWaitForFences(device_, 1, &fence_, VK_TRUE, kFiveSeconds), "wait again");
        vkDestroySemaphore(device_, semaphore, nullptr);
        if (done)
            printf("semaphore signaled and waited for\n");
        return done;
    }

    /// The signaled fence as a sync file: an fd that polls readable, whose one fence is
    /// signaled (SYNC_IOC_FILE_INFO), as an fd of this process's (dup, close).
    bool exportFence() {
        auto getFd =
            reinterpret_cast<PFN_vkGetFenceFdKHR>(vkGetDeviceProcAddr(device_, "vkGetFenceFdKHR"));
        if (!getFd)
            return ok(VK_ERROR_EXTENSION_NOT_PRESENT, "vkGetFenceFdKHR");
        VkFenceGetFdInfoKHR info{VK_STRUCTURE_TYPE_FENCE_GET_FD_INFO_KHR};
        info.fence = fence_;
        info.handleType = VK_EXTERNAL_FENCE_HANDLE_TYPE_SYNC_FD_BIT;
        int fd = -1;
        if (!ok(getFd(device_, &info, &fd), "export fence"))
            return false;
        // A signaled fence may be exported as -1 (the Vulkan spec allows it); RADV's is a file.
        if (fd < 0) {
            printf("fence sync file -1\n");
            return true;
        }
        int copy = dup(fd);
        close(fd);
        pollfd ready{copy, POLLIN, 0};
        int polled = poll(&ready, 1, 5000);
        sync_file_info file{};
        int asked = ioctl(copy, SYNC_IOC_FILE_INFO, &file);
        printf("fence sync file polls %s, file info %d status %d fences %u\n",
               polled == 1 && (ready.revents & POLLIN) ? "readable" : "not readable", asked,
               file.status, file.num_fences);
        close(copy);
        return polled == 1 && asked == 0 && file.status == 1;
    }

    /// vkCmdFillBuffer on the compute queue: what became of it (RADV 22.3 runs it on the compute
    /// ring, which the driver does not execute).
    void fill() {
        VkCommandPoolCreateInfo poolInfo{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
        poolInfo.queueFamilyIndex = family_;
        VkCommandBuffer commands;
        VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        allocate.commandBufferCount = 1;
        VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        if (!ok(vkCreateCommandPool(device_, &poolInfo, nullptr, &pool_), "command pool"))
            return;
        allocate.commandPool = pool_;
        if (!ok(vkAllocateCommandBuffers(device_, &allocate, &commands), "command buffer") ||
            !ok(vkBeginCommandBuffer(commands, &begin), "begin"))
            return;
        vkCmdFillBuffer(commands, buffer_, 0, kBytes, 0x5a5a5a5a);
        VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        submit.commandBufferCount = 1;
        submit.pCommandBuffers = &commands;
        if (!ok(vkEndCommandBuffer(commands), "end") ||
            !ok(vkResetFences(device_, 1, &fence_), "reset fence") ||
            !ok(vkQueueSubmit(queue_, 1, &submit, fence_), "submit fill") ||
            !ok(vkWaitForFences(device_, 1, &fence_, VK_TRUE, kFiveSeconds), "wait fill"))
            return;
        VkDeviceSize filled = 0;
        for (VkDeviceSize i = 0; i < kBytes; ++i)
            filled += mapped_[i] == 0x5a;
        printf("fill wrote %llu of %llu bytes\n", static_cast<unsigned long long>(filled),
               static_cast<unsigned long long>(kBytes));
    }

    void destroyFence() {
        if (fence_)
            vkDestroyFence(device_, fence_, nullptr);
        fence_ = VK_NULL_HANDLE;
    }

private:
    VkInstance instance_ = VK_NULL_HANDLE;
    VkPhysicalDevice gpu_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t family_ = 0;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    const uint8_t* mapped_ = nullptr;
    VkFence fence_ = VK_NULL_HANDLE;
    VkCommandPool pool_ = VK_NULL_HANDLE;
};

} // namespace

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    bool fill = argc > 1 && std::string(argv[1]) == "--fill";
    Client client;
    bool done = client.createDevice() && client.writeAndReadMemory() && client.submitAndWait() &&
                client.exportFence();
    if (done && fill)
        client.fill();
    client.destroyFence();
    if (!done)
        return 1;
    printf("ok\n");
    return 0;
}
