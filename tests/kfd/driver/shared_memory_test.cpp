// The user-space KFD driver with an unmodified program on it: kfd-driver serves a machine, the
// workload (AMD's thunk, preloaded with the driver's interposer) allocates VRAM and GTT, maps them
// and writes known bytes, and this test process, attached to the same driver as a plugin inside
// criu would be, reads those bytes through the machine's memory and writes one back that the
// workload reads through its own pointer. Then every process goes and the loop device with them.
#include "driver_protocol.h"
#include "known_bytes.h"
#include "loop_memory.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace {

using kfddriver::BoInfo;
using kfddriver::Message;
using kfddriver::Op;

/// A program run by the test: its stdin and stdout are pipes; it gets SIGTERM when the test dies.
class Child {
public:
    Child(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
            return;
        pid_ = fork();
        if (pid_ == 0) {
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            dup2(in[0], 0);
            dup2(out[1], 1);
            for (const std::string& e : env)
                putenv(const_cast<char*>(e.c_str()));
            std::vector<char*> args;
            for (const std::string& a : argv)
                args.push_back(const_cast<char*>(a.c_str()));
            args.push_back(nullptr);
            execv(args[0], args.data());
            _exit(127);
        }
        close(in[0]);
        close(out[1]);
        stdin_ = in[1];
        stdout_ = out[0];
    }
    ~Child() {
        if (pid_ > 0) {
            kill(pid_, SIGKILL);
            waitpid(pid_, nullptr, 0);
        }
        close(stdin_);
        close(stdout_);
    }

    pid_t pid() const { return pid_; }

    /// The next line it prints, "" when it prints none within 20 s.
    std::string line() {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (buffered_.find('\n') == std::string::npos) {
            pollfd p{stdout_, POLLIN, 0};
            if (std::chrono::steady_clock::now() > deadline || poll(&p, 1, 200) < 0)
                return "";
            char b[256];
            ssize_t n = p.revents ? read(stdout_, b, sizeof(b)) : -1;
            if (n == 0)
                return "";
            if (n > 0)
                buffered_.append(b, static_cast<size_t>(n));
        }
        size_t nl = buffered_.find('\n');
        std::string l = buffered_.substr(0, nl);
        buffered_.erase(0, nl + 1);
        return l;
    }

    void say(const std::string& text) {
        ASSERT_EQ(static_cast<ssize_t>(text.size()), write(stdin_, text.data(), text.size()));
    }

    /// Its exit status (waitpid's), -1 when it does not end within 20 s (it is killed then).
    int wait() {
        for (int i = 0; i < 200; ++i) {
            int status = 0;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return status;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        return -1;
    }

private:
    pid_t pid_ = -1;
    int stdin_ = -1, stdout_ = -1;
    std::string buffered_;
};

/// The mapping of /proc/PID/maps that holds `addr`: its path, "" when none.
std::string mappedPathAt(pid_t pid, uint64_t addr) {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
        unsigned long long lo = 0, hi = 0;
        if (sscanf(line.c_str(), "%llx-%llx", &lo, &hi) != 2 || addr < lo || addr >= hi)
            continue;
        size_t slash = line.find('/');
        return slash == std::string::npos ? "" : line.substr(slash);
    }
    return "";
}

struct Buffer {
    uint64_t addr = 0, size = 0;
};

Buffer parseBuffer(const std::string& line, const std::string& name) {
    Buffer b;
    std::istringstream in(line);
    std::string word, addr;
    in >> word >> addr >> b.size;
    EXPECT_EQ(name, word) << "the workload printed: " << line;
    b.addr = strtoull(addr.c_str(), nullptr, 16);
    return b;
}

/// The BO of the driver's process `pid` at `addr`.
BoInfo boAt(const std::vector<BoInfo>& bos, uint64_t addr) {
    for (const BoInfo& b : bos)
        if (b.addr == addr)
            return b;
    ADD_FAILURE() << "the driver has no BO at 0x" << std::hex << addr;
    return {};
}

/// The first byte of `size` bytes at `offset` of the machine's memory that is not the workload's
/// known byte of buffer `which`; size when all are.
uint64_t firstMismatch(int memory, uint64_t offset, uint64_t size, int which) {
    std::vector<uint8_t> bytes(size);
    EXPECT_EQ(static_cast<ssize_t>(size),
              pread(memory, bytes.data(), size, static_cast<off_t>(offset)));
    for (uint64_t i = 0; i < size; ++i)
        if (bytes[i] != kfddriver::knownByte(which, i))
            return i;
    return size;
}

/// Expects (gtest) `driver` to print "ready loopN"; *loop gets N.
void expectReady(Child& driver, int* loop) {
    std::string ready = driver.line();
    ASSERT_EQ(0u, ready.rfind("ready loop", 0)) << "kfd-driver printed \"" << ready << "\"";
    *loop = atoi(ready.c_str() + strlen("ready loop"));
    ASSERT_TRUE(kfddriver::loopAttached(*loop));
}

/// The driver's answer to ListBos of `pid` on connection `sock`.
Message listBos(int sock, pid_t pid) {
    Message ask, answer;
    ask.op = static_cast<uint32_t>(Op::ListBos);
    ask.a = static_cast<uint64_t>(pid);
    EXPECT_EQ(0, kfddriver::exchange(sock, ask, &answer));
    return answer;
}

TEST(KfdDriver, AProgramOnTheThunkAndASecondProcessShareTheMachinesMemory) {
    testsupport::TempDir dir;
    std::string root = dir.path();
    Child driver({KFD_DRIVER_EXE, root, "--gpus", "2"}, {});
    int loop = -1;
    ASSERT_NO_FATAL_FAILURE(expectReady(driver, &loop));

    std::string preload = std::string("LD_PRELOAD=") + KFD_DRIVER_PRELOAD;
    std::string driverEnv = "CRIU_AMDGPU_KFD_DRIVER=" + root;
    {
        Child workload({KFD_DRIVER_WORKLOAD_EXE}, {preload, driverEnv});
        Buffer vram = parseBuffer(workload.line(), "vram");
        Buffer gtt = parseBuffer(workload.line(), "gtt");
        ASSERT_EQ("ready", workload.line());

        // What criu would find: each buffer is a mapping of a block device (the machine's loop
        // device) named as the render node, not of a regular file: HANDLE_DEVICE_VMA's.
        for (const Buffer& b : {vram, gtt}) {
            std::string path = mappedPathAt(workload.pid(), b.addr);
            EXPECT_EQ(0u, path.rfind(kfddriver::filesPath(root) + "/", 0)) << path;
            EXPECT_NE(std::string::npos, path.find("/renderD")) << path;
            struct stat st {};
            ASSERT_EQ(0, stat(path.c_str(), &st)) << path;
            EXPECT_TRUE(S_ISBLK(st.st_mode)) << path;
        }

        // The second process: the driver's BOs of the workload, read in the machine's memory.
        std::string error;
        int sock = kfddriver::connectDriver(root, &error);
        ASSERT_GE(sock, 0) << error;
        Message answer = listBos(sock, workload.pid());
        close(sock);
        ASSERT_EQ(0, answer.pid);
        std::vector<BoInfo> bos;
        ASSERT_TRUE(kfddriver::decodeBos(answer.text, &bos));
        BoInfo vramBo = boAt(bos, vram.addr), gttBo = boAt(bos, gtt.addr);
        EXPECT_TRUE(vramBo.flags & KFD_IOC_ALLOC_MEM_FLAGS_VRAM);
        EXPECT_TRUE(gttBo.flags & KFD_IOC_ALLOC_MEM_FLAGS_GTT);
        ASSERT_NE(BoInfo::kNoMemory, vramBo.memoryOffset);
        ASSERT_NE(BoInfo::kNoMemory, gttBo.memoryOffset);
        int memory = open(kfddriver::memoryNodePath(root).c_str(), O_RDWR | O_CLOEXEC);
        ASSERT_GE(memory, 0) << strerror(errno);
        EXPECT_EQ(vram.size, firstMismatch(memory, vramBo.memoryOffset, vram.size, 0));
        EXPECT_EQ(gtt.size, firstMismatch(memory, gttBo.memoryOffset, gtt.size, 1));

        // And the other way: a byte written through this process's mapping of the memory is the
        // byte the workload reads through the thunk's pointer.
        void* mine = mmap(nullptr, vram.size, PROT_READ | PROT_WRITE, MAP_SHARED, memory,
                          static_cast<off_t>(vramBo.memoryOffset));
        ASSERT_NE(MAP_FAILED, mine) << strerror(errno);
        static_cast<uint8_t*>(mine)[kfddriver::kCheckerOffset] = kfddriver::kCheckerByte;
        munmap(mine, vram.size);
        close(memory);
        workload.say("check\n");
        EXPECT_EQ("saw " + std::to_string(kfddriver::kCheckerByte), workload.line());
        int status = workload.wait();
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
    }

    // The driver ends on SIGTERM, and with the last fd and mapping of it its loop device goes.
    ASSERT_EQ(0, kill(driver.pid(), SIGTERM));
    int status = driver.wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
    EXPECT_TRUE(kfddriver::loopDetachedWithin(loop, 5000))
        << "loop device " << loop << " is still attached";
}

} // namespace

namespace {

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
    EXPECT_EQ(0, listBos(sock, getpid()).pid);
    EXPECT_EQ(-ESRCH, listBos(sock, 1).pid);
    close(sock);
    ASSERT_EQ(0, kill(driver.pid(), SIGTERM));
    int status = driver.wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
    EXPECT_TRUE(kfddriver::loopDetachedWithin(loop, 5000)) << "loop device " << loop;
}

} // namespace
