#include "loop_memory.h"

#include "kfd/driver_protocol.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace kfddriver {

namespace {
constexpr unsigned kLoopMajor = 7;
constexpr uint64_t kPage = 4096;

std::string errnoText(const std::string& what, int err) {
    return what + ": " + strerror(err);
}
} // namespace

LoopMemory::LoopMemory(const std::string& backingFile, uint64_t size, std::string* error)
    : size_(size) {
    int backing = ::open(backingFile.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (backing < 0) {
        *error = errnoText("cannot create " + backingFile, errno);
        return;
    }
    if (ftruncate(backing, static_cast<off_t>(size)) != 0) {
        *error = errnoText("cannot size " + backingFile, errno);
        ::close(backing);
        return;
    }
    int control = ::open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (control < 0) {
        *error = errnoText("cannot open /dev/loop-control (loop devices are needed)", errno);
        ::close(backing);
        return;
    }
    // LOOP_CTL_GET_FREE and LOOP_CONFIGURE race with other users of loop devices: a device taken
    // in between answers EBUSY, and the next free one is tried.
    for (int attempt = 0; attempt < 16 && fd_ < 0; ++attempt) {
        int index = ioctl(control, LOOP_CTL_GET_FREE);
        if (index < 0) {
            *error = errnoText("LOOP_CTL_GET_FREE", errno);
            break;
        }
        // Our own node of the device: a container's /dev holds only the first few loop nodes.
        std::string node = backingFile + ".loop";
        ::unlink(node.c_str());
        dev_t rdev = makedev(kLoopMajor, static_cast<unsigned>(index));
        if (mknod(node.c_str(), S_IFBLK | 0600, rdev) != 0) {
            *error = errnoText("cannot make the loop node " + node, errno);
            break;
        }
        int dev = ::open(node.c_str(), O_RDWR | O_CLOEXEC);
        ::unlink(node.c_str());
        if (dev < 0) {
            *error = errnoText("cannot open loop device " + std::to_string(index), errno);
            break;
        }
        loop_config config{};
        config.fd = static_cast<uint32_t>(backing);
        config.block_size = kPage;
        config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        if (ioctl(dev, LOOP_CONFIGURE, &config) != 0) {
            int e = errno;
            ::close(dev);
            if (e == EBUSY)
                continue;
            *error = errnoText("LOOP_CONFIGURE of loop device " + std::to_string(index), e);
            break;
        }
        fd_ = dev;
        index_ = index;
        rdev_ = rdev;
        error->clear();
    }
    ::close(control);
    ::close(backing); // the loop device holds the file from here
}

LoopMemory::~LoopMemory() {
    if (fd_ >= 0)
        ::close(fd_); // autoclear detaches the device once no one else holds it
}

int LoopMemory::makeFileNode(const std::string& root, int64_t id, const std::string& name) const {
    std::string dir = filesPath(root) + "/" + std::to_string(id);
    std::string node = dir + "/" + name;
    if ((mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) ||
        (mknod(node.c_str(), S_IFBLK | 0600, rdev_) != 0 && errno != EEXIST))
        return -errno;
    return 0;
}

int LoopMemory::placeBo(uint64_t mmapOffset, uint64_t size, fakekfd::MemoryRegion* out) {
    if (mmapOffset % kPage || mmapOffset + size > kKfdPageBase)
        return -ENOSPC;
    *out = {fd_, mmapOffset, false};
    return 0;
}

int LoopMemory::placeKfdPage(uint64_t size, fakekfd::MemoryRegion* out) {
    // Aligned to 4 GiB: libhsakmt (5.2, Debian's) splits its first queue's doorbell_offset into
    // the page's offset and the doorbell's place in it before it has read its doorbell page
    // size, with the mask (size - 1) of a 32-bit zero: the page's offset is the doorbell offset
    // with its low 32 bits cleared (the kernel's offsets keep only the in-page offset there).
    uint64_t span = (size + kKfdPageAlign - 1) / kKfdPageAlign * kKfdPageAlign;
    if (nextKfdPage_ + span > size_)
        return -ENOSPC;
    *out = {fd_, nextKfdPage_, false};
    nextKfdPage_ += span;
    return 0;
}

bool loopAttached(int index) {
    struct stat st {};
    std::string dir = "/sys/block/loop" + std::to_string(index) + "/loop";
    return ::stat(dir.c_str(), &st) == 0;
}

bool loopDetachedWithin(int index, int ms) {
    for (int waited = 0; loopAttached(index); waited += 20) {
        if (waited >= ms)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

} // namespace kfddriver
