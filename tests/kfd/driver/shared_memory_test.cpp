// The user-space KFD driver with an unmodified program on it: kfd-driver serves a machine, the
// workload (AMD's thunk, preloaded with the driver's interposer) allocates VRAM and GTT, maps them
// and writes known bytes, and this test process, attached to the same driver as a plugin inside
// criu would be, reads those bytes through the machine's memory and writes one back that the
// workload reads through its own pointer. Then every process goes and the loop device with them.
#include "driver_test_support.h"
#include "kfd/driver_protocol.h"
#include "known_bytes.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace {

using kfddriver::BoInfo;
using kfddriver::Message;
using kfddriver::Op;
using namespace kfddrivertest;

TEST(KfdDriver, AProgramOnTheThunkAndASecondProcessShareTheMachinesMemory) {
    TwoGpuDriver machine;
    ASSERT_NO_FATAL_FAILURE(machine.start());
    const std::string& root = machine.root();
    {
        Printed printed;
        std::unique_ptr<Child> workload = machine.runWorkload(&printed);
        Buffer vram = printedBuffer(printed, "vram"), gtt = printedBuffer(printed, "gtt");
        ASSERT_FALSE(::testing::Test::HasFailure());

        // What criu would find: each buffer is a mapping of a block device (the machine's loop
        // device) named as the render node, not of a regular file: HANDLE_DEVICE_VMA's.
        for (const Buffer& b : {vram, gtt}) {
            std::string path = mappedPathAt(workload->pid(), b.addr);
            EXPECT_EQ(0u, path.rfind(kfddriver::filesPath(root) + "/", 0)) << path;
            EXPECT_NE(std::string::npos, path.find("/renderD")) << path;
            struct stat st {};
            ASSERT_EQ(0, stat(path.c_str(), &st)) << path;
            EXPECT_TRUE(S_ISBLK(st.st_mode)) << path;
        }

        // The second process: the driver's BOs of the workload, read in the machine's memory.
        auto bos = listed<BoInfo>(root, Op::ListBos, workload->pid(), kfddriver::decodeBos);
        ASSERT_FALSE(::testing::Test::HasFailure());
        BoInfo vramBo = boAt(bos, vram.addr), gttBo = boAt(bos, gtt.addr);
        EXPECT_TRUE(vramBo.flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM);
        EXPECT_TRUE(gttBo.flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT);
        ASSERT_NE(BoInfo::kNoMemory, vramBo.memoryOffset);
        ASSERT_NE(BoInfo::kNoMemory, gttBo.memoryOffset);
        int memory = open(kfddriver::memoryNodePath(root).c_str(), O_RDWR | O_CLOEXEC);
        ASSERT_GE(memory, 0) << strerror(errno);
        EXPECT_EQ(vram.size, firstMismatch(memoryBytes(memory, vramBo.memoryOffset, vram.size), 0));
        EXPECT_EQ(gtt.size, firstMismatch(memoryBytes(memory, gttBo.memoryOffset, gtt.size), 1));

        // And the other way: a byte written through this process's mapping of the memory is the
        // byte the workload reads through the thunk's pointer.
        void* mine = mmap(nullptr, vram.size, PROT_READ | PROT_WRITE, MAP_SHARED, memory,
                          static_cast<off_t>(vramBo.memoryOffset));
        ASSERT_NE(MAP_FAILED, mine) << strerror(errno);
        static_cast<uint8_t*>(mine)[kfddriver::kCheckerOffset] = kfddriver::kCheckerByte;
        munmap(mine, vram.size);
        close(memory);
        workload->say("check\n");
        EXPECT_EQ("saw " + std::to_string(kfddriver::kCheckerByte), workload->line());
        EXPECT_EQ("done", workload->line());
        int status = workload->wait();
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
    }
    // The driver ends on SIGTERM, and with the last fd and mapping of it its loop device goes.
    machine.end();
}

TEST(KfdDriver, TheCallerIsTheProcessThatConnectedNotThePidItsRequestsName) {
    testsupport::TempDir dir;
    Child driver({KFD_DRIVER_EXE, dir.path()}, {});
    int loop = -1;
    ASSERT_NO_FATAL_FAILURE(expectReady(driver, &loop));
    std::string error;
    int sock = kfddriver::connectDriver(dir.path(), &error);
    ASSERT_GE(sock, 0) << error;
    // An open of /dev/kfd that claims to come from init makes the KFD process of this process,
    // the one that connected (kfd_open -> kfd_create_process of `current`).
    Message open, opened;
    open.op = static_cast<uint32_t>(Op::Open);
    open.pid = 1;
    open.text = "/dev/kfd";
    ASSERT_EQ(0, kfddriver::exchange(sock, open, &opened));
    ASSERT_EQ(0, opened.pid);
    EXPECT_EQ(0, askAbout(dir.path(), Op::ListBos, getpid()).pid);
    EXPECT_EQ(-ESRCH, askAbout(dir.path(), Op::ListBos, 1).pid);
    close(sock);
    expectDriverEnds(driver, loop);
}

} // namespace
