// The driver's devices at their /dev paths (tests/e2e/kfd_device_paths.sh): a node of a driver's
// file stands for the device path of its name, and a block node of the machine's memory found
// at a device path is the device the driver says is there; any other file stays what the kernel
// says it is.
#include "driver_test_support.h"
#include "kfd/driver_kernel.h"
#include "kfd/driver_protocol.h"
#include "kfd/real_kernel.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>

namespace {

using kfddriver::devicePathOfNode;
using kfddrivertest::TwoGpuDriver;

TEST(KfdDriverProtocol, ADriversNodeStandsForTheDevicePathOfItsName) {
    EXPECT_EQ("/dev/kfd", devicePathOfNode("/machine/files/12/kfd"));
    EXPECT_EQ("/dev/dri/renderD129", devicePathOfNode("/machine/files/12/renderD129"));
    EXPECT_EQ("", devicePathOfNode("/machine/files/12/dmabuf"));
    EXPECT_EQ("", devicePathOfNode("/machine/files/12/renderD"));
    EXPECT_EQ("", devicePathOfNode("/machine/files/12/kfd2"));
    EXPECT_EQ("", devicePathOfNode(""));
}

TEST(KfdDriverKernel, ANodeOfTheMachinesMemoryAtADevicePathIsTheDeviceTheDriverSaysIsThere) {
    TwoGpuDriver machine;
    ASSERT_NO_FATAL_FAILURE(machine.start());
    std::unique_ptr<kfd::KernelInterface> kernel =
        kfd::makeDriverKernel(machine.root(), kfd::makeRealKernel());
    struct stat memory {};
    ASSERT_EQ(0, stat(kfddriver::memoryNodePath(machine.root()).c_str(), &memory))
        << strerror(errno);
    ASSERT_TRUE(S_ISBLK(memory.st_mode));
    EXPECT_TRUE(kfddriver::isMachineMemory(machine.root(), memory));

    for (const char* path : {"/dev/kfd", "/dev/dri/renderD128", "/dev/dri/renderD129"}) {
        struct stat device {};
        ASSERT_EQ(0, kernel->stat(path, &device)) << path;
        struct stat st = memory;
        ASSERT_EQ(0, kfd::asMachineDevice(*kernel, machine.root(), path, &st)) << path;
        EXPECT_TRUE(S_ISCHR(st.st_mode)) << path << " mode " << std::oct << st.st_mode;
        EXPECT_EQ(device.st_rdev, st.st_rdev) << path;
        EXPECT_EQ(memory.st_ino, st.st_ino) << path << ": the inode stays the node's";
    }

    // What stays as the kernel says: the node at a path that is no device's, and at a device
    // path a block node of another device, a character device of the same number, a file.
    auto unchanged = [&](const std::string& path, struct stat st) {
        struct stat before = st;
        ASSERT_EQ(0, kfd::asMachineDevice(*kernel, machine.root(), path, &st)) << path;
        EXPECT_EQ(before.st_mode, st.st_mode) << path;
        EXPECT_EQ(before.st_rdev, st.st_rdev) << path;
    };
    unchanged(kfddriver::memoryNodePath(machine.root()), memory);
    unchanged("/dev/dri/card0", memory);
    struct stat other = memory;
    other.st_rdev = makedev(major(memory.st_rdev), minor(memory.st_rdev) + 1);
    EXPECT_FALSE(kfddriver::isMachineMemory(machine.root(), other));
    unchanged("/dev/kfd", other);
    struct stat character = memory;
    character.st_mode = (memory.st_mode & ~S_IFMT) | S_IFCHR;
    unchanged("/dev/kfd", character);
    struct stat file {};
    ASSERT_EQ(0, stat(machine.root().c_str(), &file));
    unchanged("/dev/kfd", file);
    machine.end();
}

} // namespace
