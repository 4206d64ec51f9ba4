// The sample workload (mockgpu-workload) run as a program on a generated mock machine.

#include "mock_fixture.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace {

using mocktest::MockMachine;
using testing::HasSubstr;

constexpr const char* kWorkload = CRIU_AMDGPU_BINARY_DIR "/bin/mockgpu-workload";

struct WorkloadRun {
    int exitCode = -1;
    std::string out;
    std::string err;
    /// The value of the last "checksum <hex>" line ("" when there is none).
    std::string checksum() const {
        std::string last;
        std::regex line("checksum ([0-9a-f]{16})\n");
        for (auto it = std::sregex_iterator(out.begin(), out.end(), line);
             it != std::sregex_iterator(); ++it)
            last = (*it)[1];
        return last;
    }
};

/// The output file `path` once it holds `text` (or after about `ms` milliseconds, whatever it
/// holds).
std::string outputOnceItHolds(const std::string& path, const std::string& text, int ms) {
    std::string out;
    for (int i = 0; i < ms && out.find(text) == std::string::npos; ++i) {
        usleep(1000);
        out = testsupport::readFile(path);
    }
    return out;
}

WorkloadRun runWorkload(const MockMachine& m, const std::string& args) {
    std::string outPath = m.dir() / "out.txt";
    std::string errPath = m.dir() / "err.txt";
    std::string cmd = std::string(kWorkload) + " " + args + " >" + outPath + " 2>" + errPath;
    int status = std::system(cmd.c_str());
    WorkloadRun run;
    run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    run.out = testsupport::readFile(outPath);
    run.err = testsupport::readFile(errPath);
    return run;
}

std::string fixedArgs(const MockMachine& m) {
    return "--root " + m.root() + " --gpus 2 --buffers 3 --size 4096 --steps 4 --step-ms 0";
}

TEST(MockWorkload, GivenFixedArguments_WhenRunTwice_ThenBothRunsPrintTheSameChecksum) {
    MockMachine m(2);
    WorkloadRun first = runWorkload(m, fixedArgs(m));
    WorkloadRun second = runWorkload(m, fixedArgs(m));
    ASSERT_EQ(first.exitCode, 0) << first.err;
    ASSERT_EQ(second.exitCode, 0) << second.err;
    ASSERT_NE(first.checksum(), "") << first.out;
    EXPECT_EQ(first.checksum(), second.checksum());
}

TEST(MockWorkload, GivenFixedArguments_WhenRun_ThenTheChecksumIsTheGoldenValue) {
    // Pinned from the build that introduced this test. It depends only on the arguments and the
    // computation (the Fill/Mix kernels of the mock driver and the workload's seeds and steps);
    // it changes only if that computation changes, and then this value is updated on purpose.
    constexpr const char* kGolden = "71d61b7e63f2a78f";
    MockMachine m(2);
    WorkloadRun run = runWorkload(m, fixedArgs(m));
    ASSERT_EQ(run.exitCode, 0) << run.err;
    EXPECT_EQ(run.checksum(), kGolden);
}

TEST(MockWorkload, GivenFixedArguments_WhenRun_ThenItReportsEachGpuAndStepAndClosesItsDevices) {
    MockMachine m(2);
    WorkloadRun run = runWorkload(m, fixedArgs(m));
    ASSERT_EQ(run.exitCode, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("workload: GPU 0 is gpu_id 0x1000"));
    EXPECT_THAT(run.out, HasSubstr("workload: GPU 1 is gpu_id 0x1111"));
    EXPECT_THAT(run.out, HasSubstr("workload: step 4/4"));
    EXPECT_EQ(mocktest::contextCount(m.root()), 0u);
}

TEST(MockWorkload, GivenFork_WhenRun_ThenTheChecksumDiffersFromTheRunWithoutFork) {
    MockMachine m(2);
    WorkloadRun plain = runWorkload(m, fixedArgs(m));
    WorkloadRun forked = runWorkload(m, fixedArgs(m) + " --fork");
    ASSERT_EQ(plain.exitCode, 0) << plain.err;
    ASSERT_EQ(forked.exitCode, 0) << forked.err;
    EXPECT_THAT(forked.out, HasSubstr("child: step 4/4"));
    EXPECT_THAT(forked.out, HasSubstr("parent: step 4/4"));
    ASSERT_NE(forked.checksum(), "");
    EXPECT_NE(forked.checksum(), plain.checksum());
}

TEST(MockWorkload, GivenForkTwice_WhenRun_ThenBothRunsPrintTheSameChecksum) {
    MockMachine m(2);
    WorkloadRun first = runWorkload(m, fixedArgs(m) + " --fork");
    WorkloadRun second = runWorkload(m, fixedArgs(m) + " --fork");
    ASSERT_EQ(first.exitCode, 0) << first.err;
    EXPECT_EQ(first.checksum(), second.checksum());
}

TEST(MockWorkload, GivenResultFile_WhenRun_ThenItHoldsTheChecksumLine) {
    MockMachine m(1);
    std::string result = m.dir() / "result.txt";
    WorkloadRun run = runWorkload(m, "--root " + m.root() +
                                         " --size 64 --steps 1 --step-ms 0 --result " + result);
    ASSERT_EQ(run.exitCode, 0) << run.err;
    EXPECT_EQ(testsupport::readFile(result), "checksum " + run.checksum() + "\n");
}

TEST(MockWorkload, GivenHoldMs_WhenItHasPrintedItsChecksum_ThenItKeepsItsGpusUntilTheHoldEnds) {
    MockMachine m(1);
    std::string outPath = m.dir() / "held.txt";
    std::string cmd = std::string(kWorkload) + " --root " + m.root() +
                      " --size 64 --steps 2 --step-ms 0 --hold-ms 1500 >" + outPath;
    FILE* child = popen(cmd.c_str(), "r");
    ASSERT_NE(child, nullptr);
    ASSERT_THAT(outputOnceItHolds(outPath, "checksum ", 1000), HasSubstr("checksum "));
    EXPECT_EQ(mocktest::contextCount(m.root()), 1u) << "the GPU was closed before the hold ended";
    EXPECT_EQ(pclose(child), 0);
    EXPECT_EQ(mocktest::contextCount(m.root()), 0u);
}

TEST(MockWorkload, GivenHoldMsWithForkOrRanks_WhenRun_ThenExit1NamingTheOption) {
    MockMachine m(2);
    std::string args = "--root " + m.root() + " --gpus 2 --steps 1 --hold-ms 10";
    for (const char* many : {" --fork", " --ranks 2"}) {
        WorkloadRun run = runWorkload(m, args + many);
        EXPECT_EQ(run.exitCode, 1) << many;
        EXPECT_THAT(run.err, HasSubstr("--hold-ms is for a single process")) << many;
    }
}

TEST(MockWorkload,
     GivenAStopFile_WhenItAppearsDuringTheRun_ThenItStopsWithTheChecksumOfTheStepsDone) {
    MockMachine m(2);
    const std::string outPath = m.dir() / "stopped.txt";
    const std::string stop = m.dir() / "stop";
    const std::string args =
        "--root " + m.root() + " --gpus 2 --buffers 3 --size 4096 --shape inference";
    std::string cmd = std::string(kWorkload) + " " + args +
                      " --steps 100000 --step-ms 5 --stop-file " + stop + " >" + outPath;
    FILE* child = popen(cmd.c_str(), "r");
    ASSERT_NE(child, nullptr);
    ASSERT_THAT(outputOnceItHolds(outPath, "step 3/", 5000), HasSubstr("step 3/"));
    testsupport::writeFile(stop, "");
    ASSERT_EQ(pclose(child), 0);
    WorkloadRun stopped;
    stopped.out = testsupport::readFile(outPath);
    std::smatch step;
    ASSERT_TRUE(
        std::regex_search(stopped.out, step, std::regex("workload: stopped after step ([0-9]+)\n")))
        << stopped.out;
    unsigned steps = static_cast<unsigned>(std::stoul(step[1]));
    EXPECT_GE(steps, 3u);
    EXPECT_LT(steps, 100000u);
    WorkloadRun whole = runWorkload(m, args + " --step-ms 0 --steps " + std::to_string(steps));
    ASSERT_EQ(whole.exitCode, 0) << whole.err;
    EXPECT_EQ(stopped.checksum(), whole.checksum());
    WorkloadRun longer = runWorkload(m, args + " --step-ms 0 --steps " + std::to_string(steps + 1));
    EXPECT_NE(whole.checksum(), longer.checksum()) << "the checksum does not tell the steps apart";
}

/// The line "PREFIX<hex>" of `out` ("" when there is none): a process's "WHO checksum " line.
std::string lineValue(const std::string& out, const std::string& prefix) {
    std::smatch m;
    if (!std::regex_search(out, m, std::regex("(^|\n)" + prefix + "([0-9a-f]{16})\n")))
        return "";
    return m[2];
}

/// The step WHO said it stopped after in `out` (0 when it did not say).
unsigned stoppedAfter(const std::string& out, const std::string& who) {
    std::smatch m;
    if (!std::regex_search(out, m, std::regex(who + ": stopped after step ([0-9]+)\n")))
        return 0;
    return static_cast<unsigned>(std::stoul(m[1]));
}

/// Runs the workload of `args` with `--steps 100000 --step-ms 5 --stop-file` until each of `who`
/// has printed `"WHO: step 3/"`, then creates the stop file; returns the run's stdout and its
/// result file.
std::pair<WorkloadRun, std::string> runUntilStopped(const MockMachine& m, const std::string& args,
                                                    const std::vector<std::string>& who) {
    const std::string outPath = m.dir() / "stopped.txt";
    const std::string result = m.dir() / "stopped-result.txt";
    const std::string stop = m.dir() / "stop";
    std::string cmd = std::string(kWorkload) + " " + args +
                      " --steps 100000 --step-ms 5 --stop-file " + stop + " --result " + result +
                      " >" + outPath;
    FILE* child = popen(cmd.c_str(), "r");
    WorkloadRun run;
    if (!child)
        return {run, ""};
    for (const std::string& w : who)
        outputOnceItHolds(outPath, w + ": step 3/", 5000);
    testsupport::writeFile(stop, "");
    run.exitCode = pclose(child);
    run.out = testsupport::readFile(outPath);
    return {run, testsupport::readFile(result)};
}

TEST(MockWorkload,
     GivenForkAndAStopFile_WhenItAppears_ThenEachProcessStopsWithTheChecksumOfItsOwnSteps) {
    MockMachine m(2);
    const std::string args = "--root " + m.root() + " --gpus 2 --buffers 2 --size 4096 --fork";
    auto [stopped, result] = runUntilStopped(m, args, {"parent", "child"});
    ASSERT_EQ(stopped.exitCode, 0) << stopped.out;
    for (const char* who : {"parent", "child"}) {
        unsigned steps = stoppedAfter(stopped.out, who);
        ASSERT_GE(steps, 3u) << who << ":\n" << stopped.out;
        ASSERT_LT(steps, 100000u) << who;
        // The result file says it too, and holds the process's checksum.
        EXPECT_EQ(stoppedAfter(result, who), steps) << who << ":\n" << result;
        std::string mine = lineValue(stopped.out, std::string(who) + " checksum ");
        ASSERT_NE(mine, "") << stopped.out;
        EXPECT_EQ(lineValue(result, std::string(who) + " checksum "), mine) << result;
        WorkloadRun whole = runWorkload(m, args + " --step-ms 0 --steps " + std::to_string(steps));
        ASSERT_EQ(whole.exitCode, 0) << whole.err;
        EXPECT_EQ(mine, lineValue(whole.out, std::string(who) + " checksum ")) << who;
        WorkloadRun longer =
            runWorkload(m, args + " --step-ms 0 --steps " + std::to_string(steps + 1));
        EXPECT_NE(mine, lineValue(longer.out, std::string(who) + " checksum ")) << who;
    }
    EXPECT_EQ(result.substr(result.rfind("checksum ")), "checksum " + stopped.checksum() + "\n");
}

TEST(MockWorkload,
     GivenRanksAndAStopFile_WhenItAppears_ThenEveryRankStopsAfterTheSameStepWithItsChecksum) {
    MockMachine m(2);
    const std::string args = "--root " + m.root() + " --gpus 2 --ranks 3 --size 4096";
    auto [stopped, result] = runUntilStopped(m, args, {"rank 0", "rank 1", "rank 2"});
    ASSERT_EQ(stopped.exitCode, 0) << stopped.out;
    unsigned steps = stoppedAfter(stopped.out, "rank 0");
    ASSERT_GE(steps, 3u) << stopped.out;
    ASSERT_LT(steps, 100000u);
    EXPECT_EQ(mocktest::contextCount(m.root()), 0u); // every rank closed its GPU
    WorkloadRun whole = runWorkload(m, args + " --step-ms 0 --steps " + std::to_string(steps));
    ASSERT_EQ(whole.exitCode, 0) << whole.err;
    for (const std::string who : {"rank 0", "rank 1", "rank 2"}) {
        EXPECT_EQ(stoppedAfter(stopped.out, who), steps) << who << ":\n" << stopped.out;
        EXPECT_EQ(stoppedAfter(result, who), steps) << who << ":\n" << result;
        std::string mine = lineValue(stopped.out, who + " checksum ");
        ASSERT_NE(mine, "") << stopped.out;
        EXPECT_EQ(mine, lineValue(whole.out, who + " checksum ")) << who;
        EXPECT_EQ(lineValue(result, who + " checksum "), mine) << who;
    }
    EXPECT_EQ(stopped.checksum(), whole.checksum());
    WorkloadRun longer = runWorkload(m, args + " --step-ms 0 --steps " + std::to_string(steps + 1));
    EXPECT_NE(stopped.checksum(), longer.checksum());
}

TEST(MockWorkload, GivenAStopFileThatNeverAppears_WhenRun_ThenItRunsEveryStep) {
    MockMachine m(2);
    WorkloadRun run =
        runWorkload(m, fixedArgs(m) + " --stop-file " + std::string(m.dir() / "never"));
    ASSERT_EQ(run.exitCode, 0) << run.err;
    EXPECT_THAT(run.out, HasSubstr("step 4/4"));
    EXPECT_THAT(run.out, testing::Not(HasSubstr("stopped")));
    EXPECT_EQ(run.checksum(), runWorkload(m, fixedArgs(m)).checksum());
}

TEST(MockWorkload, GivenUnknownArgument_WhenRun_ThenExit1WithUsage) {
    MockMachine m(1);
    WorkloadRun run = runWorkload(m, "--root " + m.root() + " --bogus");
    EXPECT_EQ(run.exitCode, 1);
    EXPECT_THAT(run.err, HasSubstr("unexpected argument '--bogus'"));
    EXPECT_THAT(run.err, HasSubstr("usage: mockgpu-workload --root DIR"));
    EXPECT_EQ(run.out, "");
}

TEST(MockWorkload, GivenNonNumericSize_WhenRun_ThenExit1WithUsage) {
    MockMachine m(1);
    WorkloadRun run = runWorkload(m, "--root " + m.root() + " --size lots");
    EXPECT_EQ(run.exitCode, 1);
    EXPECT_THAT(run.err, HasSubstr("--size: 'lots' is not a size"));
    EXPECT_THAT(run.err, HasSubstr("usage: mockgpu-workload"));
}

TEST(MockWorkload, GivenSizeNotMultipleOf8_WhenRun_ThenExit1SayingSo) {
    MockMachine m(1);
    WorkloadRun run = runWorkload(m, "--root " + m.root() + " --size 12");
    EXPECT_EQ(run.exitCode, 1);
    EXPECT_THAT(run.err, HasSubstr("--size: 12 is not a multiple of 8"));
}

TEST(MockWorkload, GivenNoRoot_WhenRun_ThenExit1SayingRootIsRequired) {
    MockMachine m(1);
    WorkloadRun run = runWorkload(m, "--steps 1");
    EXPECT_EQ(run.exitCode, 1);
    EXPECT_THAT(run.err, HasSubstr("--root DIR is required"));
}

TEST(MockWorkload, GivenMoreGpusThanTheMachineHas_WhenRun_ThenExit1NamingTheGpuIndex) {
    MockMachine m(1);
    WorkloadRun run =
        runWorkload(m, "--root " + m.root() + " --gpus 2 --size 64 --steps 1 --step-ms 0");
    EXPECT_EQ(run.exitCode, 1);
    EXPECT_THAT(run.err, HasSubstr("GPU index 1 does not exist"));
}

TEST(MockWorkload, GivenHelp_WhenRun_ThenUsageAndEveryOptionWithItsDefaultOnStdout) {
    MockMachine m(1);
    WorkloadRun run = runWorkload(m, "--help");
    EXPECT_EQ(run.exitCode, 0) << run.err;
    EXPECT_THAT(run.out, testing::StartsWith("usage: mockgpu-workload --root DIR [--dev-dir DIR] "
                                             "[--gpus N] "));
    for (const char* option :
         {"--root DIR", "--dev-dir DIR", "--gpus N", "--buffers B", "--size BYTES", "--steps S",
          "--step-ms MS", "--fork", "--result FILE"})
        EXPECT_THAT(run.out, HasSubstr("\n  " + std::string(option) + " ")) << option;
    EXPECT_THAT(run.out, HasSubstr("(default: 1M)"));
    EXPECT_EQ(run.err, "");
}

TEST(MockWorkload, GivenZeroGpus_WhenRun_ThenExit1NamingGpusAndTheAcceptedRange) {
    MockMachine m(1);
    WorkloadRun run = runWorkload(m, "--root " + m.root() + " --gpus 0");
    EXPECT_EQ(run.exitCode, 1);
    EXPECT_THAT(run.err, HasSubstr("mockgpu-workload: --gpus: '0' is out of range (accepted: a "
                                   "number from 1 to 4294967295"));
    EXPECT_EQ(run.out, "");
}

TEST(MockWorkload, GivenASizeWithASuffix_WhenRun_ThenItComputesWhatTheByteCountComputes) {
    MockMachine m(1);
    std::string common = "--root " + m.root() + " --buffers 2 --steps 2 --step-ms 0 --size ";
    WorkloadRun suffixed = runWorkload(m, common + "8K");
    WorkloadRun bytes = runWorkload(m, common + "8192");
    WorkloadRun other = runWorkload(m, common + "0x4000");
    ASSERT_EQ(suffixed.exitCode, 0) << suffixed.err;
    ASSERT_EQ(bytes.exitCode, 0) << bytes.err;
    ASSERT_EQ(other.exitCode, 0) << other.err;
    ASSERT_NE(bytes.checksum(), "") << bytes.out;
    EXPECT_EQ(suffixed.checksum(), bytes.checksum());
    EXPECT_NE(other.checksum(), bytes.checksum()); // the size is in the checksum
}

/// A torchrun-shaped job of `ranks` ranks on two GPUs, sharing memory `how`.
WorkloadRun runRanks(const MockMachine& m, unsigned ranks, const std::string& how) {
    return runWorkload(m, "--root " + m.root() + " --gpus 2 --ranks " + std::to_string(ranks) +
                              " --size 4096 --steps 3 --step-ms 0 --share-by " + how);
}

TEST(MockWorkload, GivenTwoRanks_WhenTheyShareBySocketOrByPidfd_ThenBothReduceToTheSameChecksum) {
    MockMachine m(2);
    WorkloadRun scm = runRanks(m, 2, "scm");
    ASSERT_EQ(scm.exitCode, 0) << scm.err;
    EXPECT_EQ(mocktest::contextCount(m.root()), 0u); // every rank closed its GPU
    WorkloadRun pidfd = runRanks(m, 2, "pidfd");
    ASSERT_EQ(pidfd.exitCode, 0) << pidfd.err;
    ASSERT_NE(scm.checksum(), "") << scm.out;
    EXPECT_EQ(scm.checksum(), pidfd.checksum()); // how buffers travel is not in the result
    for (const char* line : {"rank 0: GPU 0, sharing with 1 peers",
                             "rank 1: GPU 1, sharing with "
                             "1 peers",
                             "rank 0: step 3/3", "rank 1: step 3/3"})
        EXPECT_THAT(scm.out, HasSubstr(line));
}

TEST(MockWorkload, GivenThreeRanks_WhenRun_ThenTheirChecksumDiffersFromTwoRanks) {
    MockMachine m(2);
    WorkloadRun two = runRanks(m, 2, "scm");
    WorkloadRun three = runRanks(m, 3, "scm");
    ASSERT_EQ(two.exitCode, 0) << two.err;
    ASSERT_EQ(three.exitCode, 0) << three.err;
    EXPECT_THAT(three.out, HasSubstr("rank 2: GPU 0, sharing with 2 peers"));
    EXPECT_NE(three.checksum(), two.checksum()); // every rank's contribution is reduced
    EXPECT_EQ(three.checksum(), runRanks(m, 3, "scm").checksum());
}

TEST(MockWorkload, GivenRanksWithForkOrTheInferenceShape_WhenRun_ThenExit1SayingWhy) {
    MockMachine m(2);
    std::string ranks = "--root " + m.root() + " --gpus 2 --ranks 2 --steps 1 ";
    WorkloadRun fork = runWorkload(m, ranks + "--fork");
    EXPECT_EQ(fork.exitCode, 1);
    EXPECT_THAT(fork.err, HasSubstr("--fork and --ranks exclude each other"));
    WorkloadRun inference = runWorkload(m, ranks + "--shape inference");
    EXPECT_EQ(inference.exitCode, 1);
    EXPECT_THAT(inference.err, HasSubstr("--shape inference: ranks run the training shape only"));
}

TEST(MockWorkload, GivenTheInferenceShape_WhenRun_ThenItsChecksumIsStableAndNotTheTrainingOne) {
    MockMachine m(1);
    std::string args = "--root " + m.root() + " --buffers 10 --size 64K --steps 3 --step-ms 0";
    WorkloadRun inference = runWorkload(m, args + " --shape inference");
    WorkloadRun again = runWorkload(m, args + " --shape inference");
    WorkloadRun training = runWorkload(m, args + " --shape training");
    ASSERT_EQ(inference.exitCode, 0) << inference.err;
    ASSERT_EQ(training.exitCode, 0) << training.err;
    ASSERT_NE(inference.checksum(), "") << inference.out;
    EXPECT_EQ(inference.checksum(), again.checksum()); // the weights come from a seed
    // 6 of the 10 buffers are weights written once, 3 never written: not what training
    // computes.
    EXPECT_NE(inference.checksum(), training.checksum());
}

} // namespace
