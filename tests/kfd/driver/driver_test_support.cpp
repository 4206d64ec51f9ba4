#include "driver_test_support.h"

#include "known_bytes.h"
#include "loop_memory.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace kfddrivertest {

Child::Child(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return;
    }
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

Child::~Child() {
    if (pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    if (stdin_ >= 0)
        close(stdin_);
    if (stdout_ >= 0)
        close(stdout_);
}

std::string Child::line() {
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

void Child::say(const std::string& text) {
    ASSERT_EQ(static_cast<ssize_t>(text.size()), write(stdin_, text.data(), text.size()));
}

int Child::wait() {
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

void expectReady(Child& driver, int* loop) {
    std::string ready = driver.line();
    ASSERT_EQ(0u, ready.rfind("ready loop", 0)) << "kfd-driver printed \"" << ready << "\"";
    *loop = atoi(ready.c_str() + strlen("ready loop"));
    ASSERT_TRUE(kfddriver::loopAttached(*loop));
}

void expectDriverEnds(Child& driver, int loop) {
    ASSERT_EQ(0, kill(driver.pid(), SIGTERM));
    int status = driver.wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
    EXPECT_TRUE(kfddriver::loopDetachedWithin(loop, 5000))
        << "loop device " << loop << " is still attached";
}

TwoGpuDriver::TwoGpuDriver()
    : root_(dir_.path()), driver_({KFD_DRIVER_EXE, root_, "--gpus", "2"}, {}) {}

std::unique_ptr<Child> TwoGpuDriver::runWorkload(Printed* printed) const {
    auto workload = std::make_unique<Child>(
        std::vector<std::string>{KFD_DRIVER_WORKLOAD_EXE},
        std::vector<std::string>{std::string("LD_PRELOAD=") + KFD_DRIVER_PRELOAD,
                                 "CRIU_AMDGPU_KFD_DRIVER=" + root_});
    *printed = readUntilReady(*workload);
    return workload;
}

Printed readUntilReady(Child& workload) {
    Printed printed;
    for (std::string line = workload.line(); line != "ready"; line = workload.line()) {
        if (line.empty()) {
            ADD_FAILURE() << "the workload ended before \"ready\"";
            break;
        }
        std::istringstream in(line);
        std::string key, word;
        in >> key;
        if (key == "queue" && in >> word)
            key += " " + word;
        std::vector<std::string>& words = printed[key];
        while (in >> word)
            words.push_back(word);
    }
    return printed;
}

uint64_t number(const std::string& word) {
    return strtoull(word.c_str(), nullptr, 0);
}

Buffer printedBuffer(const Printed& printed, const std::string& name) {
    auto it = printed.find(name);
    if (it == printed.end() || it->second.size() != 2) {
        ADD_FAILURE() << "the workload printed no \"" << name << " ADDR SIZE\"";
        return {};
    }
    return {number(it->second[0]), number(it->second[1])};
}

kfddriver::BoInfo boAt(const std::vector<kfddriver::BoInfo>& bos, uint64_t addr) {
    for (const kfddriver::BoInfo& b : bos)
        if (b.addr == addr)
            return b;
    ADD_FAILURE() << "the driver has no BO at 0x" << std::hex << addr;
    return {};
}

std::vector<uint8_t> memoryBytes(int memory, uint64_t offset, uint64_t size) {
    std::vector<uint8_t> bytes(size);
    EXPECT_EQ(static_cast<ssize_t>(size),
              pread(memory, bytes.data(), size, static_cast<off_t>(offset)))
        << "the machine's memory at " << offset;
    return bytes;
}

uint64_t firstMismatch(const std::vector<uint8_t>& bytes, int which) {
    for (uint64_t i = 0; i < bytes.size(); ++i)
        if (bytes[i] != kfddriver::knownByte(which, i))
            return i;
    return bytes.size();
}

kfddriver::Message askAbout(const std::string& root, kfddriver::Op op, pid_t pid) {
    std::string error;
    int sock = kfddriver::connectDriver(root, &error);
    EXPECT_GE(sock, 0) << error;
    kfddriver::Message ask, answer;
    ask.op = static_cast<uint32_t>(op);
    ask.a = static_cast<uint64_t>(pid);
    answer.pid = -EIO;
    if (sock >= 0) {
        EXPECT_EQ(0, kfddriver::exchange(sock, ask, &answer));
        close(sock);
    }
    return answer;
}

} // namespace kfddrivertest
