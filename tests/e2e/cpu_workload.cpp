// e2e-cpu-workload: a process that uses no GPU (scenario 5): S steps of a computation in host
// memory, sleeping between steps; prints "checksum <hex>" last, and writes it to --result FILE.
// With --go-file FILE --wait-at N it waits after step N until FILE exists: a scenario dumps it
// there, makes FILE and restores it, so no dump races the end of the run however slow criu starts
// (criu under ASan on a loaded machine took 2.3 s to reach the task, longer than the run's rest).

#include "cmdline/program.h"
#include "cmdline/value_options.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
    unsigned steps = 20, stepMs = 100, waitAt = 0;
    std::string result, hold, goFile;
};

int run(const Options& o) {
    // Keep a device open for the whole run (scenario other_plugin).
    if (!o.hold.empty() && open(o.hold.c_str(), O_RDONLY) < 0) {
        perror(o.hold.c_str());
        return 1;
    }
    unsigned steps = o.steps, stepMs = o.stepMs;
    const std::string& result = o.result;
    std::vector<uint64_t> state(1 << 16);
    for (size_t i = 0; i < state.size(); ++i)
        state[i] = i * 0x9e3779b97f4a7c15ull;
    for (unsigned s = 1; s <= steps; ++s) {
        for (size_t i = 0; i < state.size(); ++i)
            state[i] = (state[i] ^ state[(i + 1) % state.size()]) * 0x5851f42d4c957f2dull + s;
        printf("cpu: step %u/%u\n", s, steps);
        fflush(stdout);
        if (s == o.waitAt && !o.goFile.empty()) {
            printf("cpu: waiting for %s\n", o.goFile.c_str());
            fflush(stdout);
            while (access(o.goFile.c_str(), F_OK) != 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(stepMs));
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t v : state)
        h = (h ^ v) * 0x100000001b3ull;
    printf("checksum %016llx\n", static_cast<unsigned long long>(h));
    if (!result.empty()) {
        FILE* f = fopen(result.c_str(), "w");
        if (!f)
            return 1;
        fprintf(f, "checksum %016llx\n", static_cast<unsigned long long>(h));
        fclose(f);
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    cmdline::Program program("e2e-cpu-workload", "A process that uses no GPU.",
                             "Runs S steps of a computation in host memory, sleeping MS "
                             "milliseconds after each; prints 'checksum <hex>' last.");
    cmdline::Command app = program.root();
    cmdline::addNumberOption(app, "--steps", &o.steps, 0, UINT32_MAX, "S", "steps to run");
    cmdline::addNumberOption(app, "--step-ms", &o.stepMs, 0, UINT32_MAX, "MS",
                             "milliseconds to sleep after each step");
    app.addOption("--result", o.result, "also write the checksum line to FILE").typeName("FILE");
    app.addOption("--hold", o.hold, "keep DEVICE open for the whole run").typeName("DEVICE");
    app.addOption("--go-file", o.goFile, "after step --wait-at, wait until FILE exists")
        .typeName("FILE");
    cmdline::addNumberOption(app, "--wait-at", &o.waitAt, 0, UINT32_MAX, "N",
                             "the step after which to wait for --go-file");
    program.onRun(app, [&o] { return run(o); });
    return program.run(argc, argv);
}
