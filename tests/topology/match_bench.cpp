// Topology benchmarks (label bench): each figure is printed beside its target. The program fails
// (exit 1) only when it cannot measure: the tool will not run, a tree cannot be written, or a
// match gives another answer than the one being timed. A missed target is printed as MISSED.
//
//   topology_bench [--quick]
//
// - In-process match of 64 partitions (a generated CPX machine, and the real capture when
//   present): target 0.5 ms.
// - `criu-amdgpu topology match` as a whole process on two 64-partition trees: target 50 ms.
// - Other shapes (8 to 64 GPUs, mappings that must swap hives or sort VRAM, a failure explained).
// - A crafted topology that would keep the search busy for minutes: the time until the search
//   budget stops it (target: 2 s).
#include "temp_dir.h"
#include "topology/match.h"
#include "topology/synth.h"
#include "topology/sysfs.h"
#include "topology_fixtures.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <spawn.h>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

using testsupport::gpuAt;
using testsupport::setVram;
using testsupport::synth;

constexpr uint64_t kGiB = 1ull << 30;
bool quick = false;
bool measuredAll = true;

double nowSeconds(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

void cannotMeasure(const std::string& what) {
    std::printf("  CANNOT MEASURE: %s\n", what.c_str());
    measuredAll = false;
}

// Which figure a target is compared with: the CPU time (what this thread spent, which other
// programs on the machine hardly inflate), or the shortest wall time of the runs (for a process
// that reads with several threads; inflated on a busy machine, see the load average printed).
enum class Against { Cpu, MinWall };

// Prints one figure: "name: wall median X ms (min Y) cpu Z ms; target T ms OK|MISSED".
void report(const std::string& name, const std::vector<double>& wall,
            const std::vector<double>& cpu, double targetMs, const std::string& extra = "",
            Against against = Against::Cpu) {
    double w = median(wall) * 1e3, wmin = *std::min_element(wall.begin(), wall.end()) * 1e3;
    double c = median(cpu) * 1e3;
    std::printf("  %-44s wall %8.3f ms (min %8.3f)  cpu %8.3f ms", name.c_str(), w, wmin, c);
    double figure = against == Against::Cpu ? c : wmin;
    if (targetMs > 0)
        std::printf("  target %g ms (%s) %s", targetMs,
                    against == Against::Cpu ? "cpu" : "min wall",
                    figure <= targetMs ? "OK" : "MISSED");
    if (!extra.empty())
        std::printf("  %s", extra.c_str());
    std::printf("\n");
}

// Times matchTopologies in this thread: repeated for about `seconds`, at least 5 times.
void timeMatch(const std::string& name, const topology::Topology& s, const topology::Topology& d,
               bool expected, double targetMs, const topology::MatchOptions& o = {}) {
    std::vector<double> wall, cpu;
    topology::MatchReport last;
    double until = nowSeconds(CLOCK_MONOTONIC) + (quick ? 0.2 : 1.0);
    while (wall.size() < 5 || (nowSeconds(CLOCK_MONOTONIC) < until && wall.size() < 100000)) {
        double w0 = nowSeconds(CLOCK_MONOTONIC), c0 = nowSeconds(CLOCK_THREAD_CPUTIME_ID);
        last = topology::matchTopologies(s, d, o);
        cpu.push_back(nowSeconds(CLOCK_THREAD_CPUTIME_ID) - c0);
        wall.push_back(nowSeconds(CLOCK_MONOTONIC) - w0);
        if (last.matched != expected) {
            cannotMeasure(name + ": the match " + (last.matched ? "succeeded" : "failed") +
                          (last.reasons.empty() ? "" : " (" + last.reasons.front() + ")"));
            return;
        }
    }
    report(name, wall, cpu, targetMs,
           "nodes " + std::to_string(last.searchNodes) + ", steps " +
               std::to_string(last.searchSteps));
}

// A machine of 8 cards in CPX mode: 64 partitions in one XGMI hive on 2 CPU nodes, as the real
// capture has it (io_links only, no caches).
topology::Topology cpx64(uint32_t gpuIdBase, bool caches) {
    topology::SyntheticSpec spec;
    spec.cpuNodes = 2;
    spec.gpus = 64;
    spec.hives = 1;
    spec.deviceId = 0x74a1;
    spec.gpuIdBase = gpuIdBase;
    spec.gpuIdStride = 0x35;
    topology::Topology t = topology::makeSyntheticTopology(spec);
    if (!caches)
        for (topology::Node& n : t.nodes)
            n.caches.clear();
    return t;
}

size_t fileCount(const std::string& root) {
    size_t n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        n += it->is_regular_file(ec);
    return n;
}

// Runs the tool once; wall and CPU seconds (user + system of the child); false when it cannot.
bool runTool(const std::vector<std::string>& args, double* wall, double* cpu, int* status) {
    std::vector<char*> argv;
    std::string tool = CRIU_AMDGPU_TOOL;
    argv.push_back(tool.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> envText = {
        "CRIU_AMDGPU_CONFIG=", "CRIU_AMDGPU_OPTIONS_FILE=", "PATH=/usr/bin:/bin"};
    std::vector<char*> env;
    for (std::string& e : envText)
        env.push_back(e.data());
    env.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    double w0 = nowSeconds(CLOCK_MONOTONIC);
    pid_t pid = 0;
    int err = posix_spawn(&pid, tool.c_str(), &actions, nullptr, argv.data(), env.data());
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0)
        return false;
    int st = 0;
    rusage ru{};
    if (wait4(pid, &st, 0, &ru) != pid)
        return false;
    *wall = nowSeconds(CLOCK_MONOTONIC) - w0;
    *cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return true;
}

void timeTool(const std::string& name, const std::string& src, const std::string& dst) {
    std::vector<double> wall, cpu;
    size_t runs = quick ? 7 : 25;
    for (size_t i = 0; i < runs; ++i) {
        double w = 0, c = 0;
        int status = -1;
        if (!runTool({"topology", "match", "--src", src, "--dst", dst}, &w, &c, &status)) {
            cannotMeasure(name + ": cannot run " CRIU_AMDGPU_TOOL);
            return;
        }
        if (status != 0) {
            cannotMeasure(name + ": the tool exited with " + std::to_string(status));
            return;
        }
        wall.push_back(w);
        cpu.push_back(c);
    }
    report(name, wall, cpu, 50, std::to_string(fileCount(src) + fileCount(dst)) + " files",
           Against::MinWall);
}

bool written(const topology::Topology& t, const std::string& root) {
    auto r = topology::writeKfdTopology(t, root);
    if (!r.ok())
        cannotMeasure("cannot write " + root + ": " + r.error().describe());
    return r.ok();
}

} // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        quick |= std::string(argv[i]) == "--quick";
    std::string captures = CRIU_AMDGPU_SHARED_FIXTURES;
    struct stat st;
    bool haveCapture = ::stat((captures + "/mi300x-8card-cpx").c_str(), &st) == 0;

    std::printf("In-process match (median of repeated calls; CPU time of this thread):\n");
    topology::Topology a = cpx64(0x1000, false), b = cpx64(0x9000, false);
    timeMatch("64 CPX partitions onto themselves", a, a, true, 0.5);
    timeMatch("64 CPX partitions onto other gpu_ids", a, b, true, 0.5);
    if (haveCapture) {
        auto cap = topology::readKfdTopology(captures + "/mi300x-8card-cpx");
        if (cap.ok())
            timeMatch("real MI300X capture (63 partitions)", *cap, *cap, true, 0.5);
        else
            cannotMeasure("cannot read the MI300X capture: " + cap.error().describe());
    } else {
        std::printf("  (no capture at %s/mi300x-8card-cpx)\n", captures.c_str());
    }

    std::printf("Other shapes (no target; for comparison across changes):\n");
    for (unsigned n : {8u, 16u, 64u}) {
        unsigned hives = n >= 8 ? n / 8 : 1;
        topology::Topology s = synth(n, hives, 2), d = synth(n, hives, 2, 0x9000);
        timeMatch(std::to_string(n) + " GPUs in " + std::to_string(hives) + " hives, other ids", s,
                  d, true, 0);
    }
    {
        const unsigned n = 64;
        topology::Topology s = synth(n), d = synth(n, 0, 1, 0x9000);
        for (unsigned i = 0; i < n; ++i) {
            setVram(gpuAt(s, i), (i + 1) * kGiB);
            setVram(gpuAt(d, i), (n - i) * kGiB);
        }
        timeMatch("64 GPUs whose VRAM fits in one order", s, d, true, 0);
        topology::Topology hs = synth(n, 16), hd = synth(n, 16, 1, 0x9000);
        for (unsigned i = 0; i < n; ++i) {
            setVram(gpuAt(hs, i), (i * 16 / n + 1) * kGiB);
            setVram(gpuAt(hd, i), (16 - i * 16 / n) * kGiB);
        }
        timeMatch("16 hives of 4 that must swap", hs, hd, true, 0);
        topology::Topology bs = synth(n, 16), bd = synth(n, 16, 1, 0x9000);
        testsupport::removeLink(bd, gpuAt(bd, n - 4).index, gpuAt(bd, n - 3).index);
        timeMatch("16 hives, one link missing: no mapping, explained", bs, bd, false, 0);
    }

    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) < 1)
        load[0] = -1;
    std::printf("Whole process: criu-amdgpu topology match (median of runs; CPU = user + system of "
                "all its threads; load average %.2f on %u CPUs):\n",
                load[0], std::thread::hardware_concurrency());
    // The trees go to memory (/dev/shm) when it can take them: sysfs is in memory too, and a
    // busy disk would only slow the writing down.
    if (::access("/dev/shm", W_OK) == 0 && !std::getenv("TMPDIR"))
        ::setenv("TMPDIR", "/dev/shm", 1);
    testsupport::TempDir dir;
    if (written(cpx64(0x1000, false), dir / "src") && written(cpx64(0x9000, false), dir / "dst"))
        timeTool("two generated 64-partition trees", dir / "src", dir / "dst");
    if (written(cpx64(0x1000, true), dir / "src-caches") &&
        written(cpx64(0x9000, true), dir / "dst-caches")) {
        std::printf("  (the same with 25 caches per partition, as real trees have; no target)\n");
        timeTool("two 64-partition trees with caches", dir / "src-caches", dir / "dst-caches");
    }
    if (haveCapture)
        timeTool("real MI300X capture onto itself", captures + "/mi300x-8card-cpx",
                 captures + "/mi300x-8card-cpx");

    std::printf("Search budget: a crafted topology (a hive of 12 into 96 randomly linked GPUs):\n");
    {
        topology::Topology s, d;
        testsupport::craftedSearchTrap(&s, &d);
        double w0 = nowSeconds(CLOCK_MONOTONIC), c0 = nowSeconds(CLOCK_THREAD_CPUTIME_ID);
        topology::MatchReport r = topology::matchTopologies(s, d, {});
        double w = nowSeconds(CLOCK_MONOTONIC) - w0, c = nowSeconds(CLOCK_THREAD_CPUTIME_ID) - c0;
        if (!r.budgetExhausted || r.matched)
            cannotMeasure("the crafted topology did not exhaust the budget");
        else
            report("time until the budget stops the search", {w}, {c}, 2000,
                   std::to_string(r.searchSteps) + " steps, " + std::to_string(r.searchNodes) +
                       " nodes");
    }
    std::printf(measuredAll ? "All figures measured.\n" : "Some figures could not be measured.\n");
    return measuredAll ? 0 : 1;
}
