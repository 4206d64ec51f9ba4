// What a test controls of the user-space KFD driver (driver_server.h): ROOT/faults, and the tasks
// that exited, which the driver reaps as the kernel closes a dead task's files.
#include "driver_server.h"
#include "kfd/driver_protocol.h"
#include "temp_dir.h"

#include <gtest/gtest.h>
#include <linux/kfd_ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace {

using kfddriver::InjectedFault;
using kfddriver::Message;

Message openKfd(kfddriver::DriverServer& server, int pid) {
    Message open;
    open.op = static_cast<uint32_t>(kfddriver::Op::Open);
    open.pid = pid;
    open.text = "/dev/kfd";
    return server.handle(open);
}

std::vector<uint64_t> processesOf(kfddriver::DriverServer& server) {
    Message list;
    list.op = static_cast<uint32_t>(kfddriver::Op::ListBos);
    list.a = 0;
    Message answer = server.handle(list);
    std::vector<uint64_t> pids;
    EXPECT_EQ(0, answer.pid);
    EXPECT_TRUE(kfddriver::decodeNumbers(answer.text, &pids));
    return pids;
}

TEST(KfdDriverFaults, AFaultsFileParsesAndABadLineIsRefusedNamingIt) {
    std::vector<InjectedFault> faults;
    std::string error;
    ASSERT_TRUE(kfddriver::parseFaults(
        "ioctl:RESTORE EIO\n\nsubmitSdma ETIME 3\nioctl:CHECKPOINT STALL\n", &faults, &error))
        << error;
    ASSERT_EQ(3u, faults.size());
    EXPECT_EQ("ioctl:RESTORE", faults[0].name);
    EXPECT_EQ(EIO, faults[0].err);
    EXPECT_EQ(1, faults[0].nth);
    EXPECT_EQ(ETIME, faults[1].err);
    EXPECT_EQ(3, faults[1].nth);
    EXPECT_EQ(InjectedFault::kStall, faults[2].err);
    for (const char* bad : {"open EWHAT", "open", "open EIO 0", "open EIO 1 more", "open EIO x"}) {
        faults.clear();
        error.clear();
        EXPECT_FALSE(kfddriver::parseFaults(std::string("submitSdma EIO\n") + bad, &faults, &error))
            << bad;
        EXPECT_NE(std::string::npos, error.find("line 2 \"" + std::string(bad) + "\"")) << error;
    }
}

TEST(KfdDriverFaults, AStallNamesTheCriuOpOrTheSdmaCallItHolds) {
    Message call;
    call.op = static_cast<uint32_t>(kfddriver::Op::Ioctl);
    call.a = AMDKFD_IOC_CRIU_OP;
    kfd_ioctl_criu_args args{};
    args.op = KFD_CRIU_OP_CHECKPOINT;
    call.text.assign(reinterpret_cast<const char*>(&args), sizeof(args));
    EXPECT_EQ("ioctl:CHECKPOINT", kfddriver::stallName(call));
    call.a = AMDKFD_IOC_GET_VERSION;
    EXPECT_EQ("", kfddriver::stallName(call));
    Message submit;
    submit.op = static_cast<uint32_t>(kfddriver::Op::Libdrm);
    submit.a = static_cast<uint64_t>(kfddriver::LibdrmCall::SubmitSdma);
    EXPECT_EQ("submitSdma", kfddriver::stallName(submit));
}

TEST(KfdDriverServer, AFaultsFileFailsTheNamedCallOnceAndIsTakenAndABadOneIsNotApplied) {
    testsupport::TempDir dir;
    std::string error;
    kfddriver::DriverServer server(dir.path(), kfddriver::MachineSpec{}, &error);
    ASSERT_EQ("", error);
    std::string faults = dir.path() + "/faults";
    std::ofstream(faults) << "open EACCES\n";
    EXPECT_EQ(-EACCES, openKfd(server, getpid()).pid);
    EXPECT_NE(0, access(faults.c_str(), F_OK)) << "the driver left its faults file";
    EXPECT_EQ(0, openKfd(server, getpid()).pid) << "the fault failed more than one call";
    std::ofstream(faults) << "open EACCES\nopen\n";
    EXPECT_EQ(-EINVAL, server.applyFaultsFile());
    EXPECT_EQ(0, openKfd(server, getpid()).pid) << "a file that does not parse was applied";
}

TEST(KfdDriverServer, ATaskThatExitedLosesItsFilesAndItsKfdProcess) {
    testsupport::TempDir dir;
    std::string error;
    kfddriver::DriverServer server(dir.path(), kfddriver::MachineSpec{}, &error);
    ASSERT_EQ("", error);
    pid_t gone = fork();
    ASSERT_GE(gone, 0);
    if (gone == 0)
        _exit(0);
    ASSERT_EQ(gone, waitpid(gone, nullptr, 0));
    ASSERT_EQ(0, openKfd(server, gone).pid);
    ASSERT_EQ(0, openKfd(server, getpid()).pid);
    EXPECT_EQ(2u, processesOf(server).size());
    server.reapExitedTasks();
    EXPECT_EQ(std::vector<uint64_t>{static_cast<uint64_t>(getpid())}, processesOf(server));
}

} // namespace
