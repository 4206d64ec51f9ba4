#pragma once
/// \file
/// What the driver's tests share: programs run as children (the driver, the workload), what the
/// workload prints, and the driver's answers a second process attached to it gets.

#include "kfd/driver_protocol.h"

#include "temp_dir.h"

#include <gtest/gtest.h>

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kfddrivertest {

/// A program run by the test: its stdin and stdout are pipes; it gets SIGTERM when the test dies.
class Child {
public:
    Child(const std::vector<std::string>& argv, const std::vector<std::string>& env);
    ~Child();
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    pid_t pid() const { return pid_; }
    /// The next line it prints, "" when it prints none within 20 s.
    std::string line();
    /// Writes `text` to its stdin (gtest assertion).
    void say(const std::string& text);
    /// Its exit status (waitpid's), -1 when it does not end within 20 s (it is killed then).
    int wait();

private:
    pid_t pid_ = -1;
    int stdin_ = -1, stdout_ = -1;
    std::string buffered_;
};

/// The mapping of /proc/PID/maps that holds `addr`: its path, "" when none.
std::string mappedPathAt(pid_t pid, uint64_t addr);

/// Expects (gtest) `driver` to print "ready loopN"; *loop gets N.
void expectReady(Child& driver, int* loop);
/// Sends SIGTERM to the driver and expects (gtest) it to exit 0 and its loop device to go.
void expectDriverEnds(Child& driver, int loop);

/// Lines a program printed, by their key: the rest of each line in words.
using Printed = std::map<std::string, std::vector<std::string>>;

/// kfd-driver serving a machine of two GPUs under a temporary root.
class TwoGpuDriver {
public:
    TwoGpuDriver();
    /// Waits until it serves (gtest assertion).
    void start() { expectReady(driver_, &loop_); }
    /// Ends it; expects (gtest) it to exit 0 and its loop device to go.
    void end() { expectDriverEnds(driver_, loop_); }
    const std::string& root() const { return root_; }
    /// kfd-driver-workload on this driver, preloaded with the driver's interposer, once it
    /// printed "ready": *printed gets what it printed up to there (readUntilReady).
    std::unique_ptr<Child> runWorkload(Printed* printed) const;

private:
    testsupport::TempDir dir_;
    std::string root_;
    Child driver_;
    int loop_ = -1;
};

/// What kfd-driver-workload printed up to "ready": each line by its first word ("queue" lines by
/// their first two), the rest of the line split into words (gtest expectations).
Printed readUntilReady(Child& workload);
/// The number a word of the workload's lines is (a %p address or a decimal size).
uint64_t number(const std::string& word);

/// A buffer of the workload, as it printed it ("NAME ADDR SIZE").
struct Buffer {
    uint64_t addr = 0, size = 0;
};
/// The buffer the workload printed as `name` (gtest expectation that it did).
Buffer printedBuffer(const Printed& printed, const std::string& name);

/// The BO at `addr` among `bos` (gtest expectation that there is one).
kfddriver::BoInfo boAt(const std::vector<kfddriver::BoInfo>& bos, uint64_t addr);

/// `size` bytes at `offset` of the machine's memory through fd `memory` (gtest expectation that
/// they read).
std::vector<uint8_t> memoryBytes(int memory, uint64_t offset, uint64_t size);
/// The first of `bytes` that is not the workload's known byte of buffer `which` at its offset;
/// bytes.size() when all are.
uint64_t firstMismatch(const std::vector<uint8_t>& bytes, int which);

/// The driver's answer to `op` (ListBos, ListQueues, ListEvents) about process `pid`, asked on a
/// connection of this process (gtest expectations).
kfddriver::Message askAbout(const std::string& root, kfddriver::Op op, pid_t pid);

/// The records of the driver's answer to `op` about `pid`, decoded by `decode` (gtest
/// expectations that the driver answers and they decode); *a gets the answer's `a`.
template <typename T, typename Decode>
std::vector<T> listed(const std::string& root, kfddriver::Op op, pid_t pid, Decode decode,
                      uint64_t* a = nullptr) {
    kfddriver::Message answer = askAbout(root, op, pid);
    std::vector<T> records;
    EXPECT_EQ(0, answer.pid);
    EXPECT_TRUE(decode(answer.text, &records));
    if (a)
        *a = answer.a;
    return records;
}

} // namespace kfddrivertest
