// criu-amdgpu paused: the processes whose GPU work a dump left paused, and their release. A dump's
// guardian (criu-frontend/dump_guardian.h) releases them when criu dies; this is for when the
// guardian died too (a whole cgroup killed) or could not release one. It lists what the guardians
// recorded (coordination/paused_record.h) and, on the mock GPU, the contexts whose queues are
// paused; it releases a process through the backend the plugin would choose
// (hal::Device::releasePaused: KFD's UNPAUSE as the process's tracer for the call, the mock's
// unpause).

#include "command.h"
#include "json_output.h"
#include "tool_paths.h"

#include "config/config.h"
#include "coordination/paused_record.h"
#include "coordination/process_pin.h"
#include "hal/device.h"
#include "hal/registry.h"
#include "mockgpu/context.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include <unistd.h>

namespace {

struct Options {
    std::string dir = coordination::kDefaultGuardianDir;
    std::string root; ///< mock machine (default: the configured mock-root)
    int pid = 0;
    bool json = false;
};

/// Whether `pid` runs: exists and is not a zombie (a killed guardian waits for init to reap it).
bool alive(int pid) {
    if (pid <= 0)
        return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    size_t paren = text.rfind(')');
    return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z' &&
           text[paren + 2] != 'X';
}

/// The settings the plugin would use, with --root as the mock root when given.
base::Result<settings::Settings> settingsFor(const Options& o) {
    HAL_TRY_ASSIGN(settings::Settings s,
                   config::loadSettings(config::Sources::fromProcessEnvironment()));
    if (!o.root.empty())
        s.mockRoot = o.root;
    return s;
}

/// A paused mock context: its id, GPU and owner.
struct PausedContext {
    uint32_t id = 0;
    uint32_t gpuId = 0;
    int ownerPid = 0;
    int restoringCriu = 0; ///< nonzero: recreated by a restore that never resumed it
};

base::Result<std::vector<PausedContext>> pausedMockContexts(const std::string& root) {
    std::vector<PausedContext> out;
    HAL_TRY_ASSIGN(std::vector<mock::Context> contexts, mock::listContexts(root));
    for (const mock::Context& c : contexts) {
        if (!c.pausedMarker())
            continue;
        auto s = c.load();
        if (!s.ok()) {
            out.push_back({c.id(), 0, 0, 0});
            continue;
        }
        int criu = s->restoreSession ? mock::restoringCriuOf(s->restoreSession) : 0;
        out.push_back({c.id(), s->gpuId, s->ownerPid, criu});
    }
    return out;
}

/// The --json object of `paused list`, keys in this order:
///   dir       string: where the guardians' records are
///   recorded  array, one object per process a guardian recorded as paused: pid (integer),
///             criu (integer: the dump's criu), criu_alive (bool), guardian (integer),
///             guardian_alive (bool), backend (string), record (string: its file)
///   mock_root string, only with a mock machine: its directory
///   mock      array, only with a mock machine: one object per paused context: context
///             (integer), gpu_id (integer), owner (integer: the process that holds it),
///             restoring_criu (integer: the criu of a restore that never resumed it; 0 when it
///             was paused by a dump)
int list(const Options& o) {
    auto records = coordination::readPausedRecords(o.dir);
    if (!records.ok()) {
        fprintf(stderr, "criu-amdgpu paused list: %s\n", records.error().describe().c_str());
        return tools::kExitBadInput;
    }
    auto settings = settingsFor(o);
    std::string root = settings.ok() ? settings->mockRoot : o.root;
    std::vector<PausedContext> contexts;
    if (!root.empty()) {
        auto found = pausedMockContexts(root);
        if (!found.ok()) {
            fprintf(stderr, "criu-amdgpu paused list: mock GPU machine %s: %s\n", root.c_str(),
                    found.error().describe().c_str());
            return tools::kExitBadInput;
        }
        contexts = std::move(found).value();
    }
    if (o.json) {
        tools::Json out;
        out["dir"] = o.dir;
        out["recorded"] = tools::Json::array();
        for (const coordination::PausedRecord& r : *records)
            for (int pid : r.paused)
                out["recorded"].push_back({{"pid", pid},
                                           {"criu", r.criuPid},
                                           {"criu_alive", alive(r.criuPid)},
                                           {"guardian", r.guardianPid},
                                           {"guardian_alive", alive(r.guardianPid)},
                                           {"backend", r.backend},
                                           {"record", r.path}});
        if (!root.empty()) {
            out["mock_root"] = root;
            out["mock"] = tools::Json::array();
            for (const PausedContext& c : contexts)
                out["mock"].push_back({{"context", c.id},
                                       {"gpu_id", c.gpuId},
                                       {"owner", c.ownerPid},
                                       {"restoring_criu", c.restoringCriu}});
        }
        tools::printJson(out);
        return 0;
    }
    size_t recorded = 0;
    for (const coordination::PausedRecord& r : *records)
        for (int pid : r.paused) {
            ++recorded;
            printf("process %d: paused by criu %d (%s), guardian %d (%s), %s backend (%s)\n", pid,
                   r.criuPid, alive(r.criuPid) ? "running" : "gone", r.guardianPid,
                   alive(r.guardianPid) ? "running" : "gone", r.backend.c_str(), r.path.c_str());
        }
    if (!recorded)
        printf("no process recorded as paused in %s\n", o.dir.c_str());
    if (!root.empty()) {
        for (const PausedContext& c : contexts) {
            printf("mock context %u (GPU 0x%04x) of process %d: queues paused", c.id, c.gpuId,
                   c.ownerPid);
            if (c.restoringCriu)
                printf(" (half-restored by criu %d, %s: kill the process, not release it)",
                       c.restoringCriu, alive(c.restoringCriu) ? "still restoring" : "gone");
            printf("\n");
        }
        if (contexts.empty())
            printf("no paused context on the mock GPU machine %s\n", root.c_str());
    }
    return 0;
}

/// Whether a guardian's record in `dir` names `pid` as paused.
base::Result<bool> recorded(const std::string& dir, int pid) {
    HAL_TRY_ASSIGN(std::vector<coordination::PausedRecord> records,
                   coordination::readPausedRecords(dir));
    for (const coordination::PausedRecord& r : records)
        if (std::find(r.paused.begin(), r.paused.end(), pid) != r.paused.end())
            return true;
    return false;
}

int release(const Options& o) {
    auto settings = settingsFor(o);
    if (!settings.ok()) {
        fprintf(stderr, "criu-amdgpu paused release: %s\n", settings.error().describe().c_str());
        return tools::kExitBadInput;
    }
    // Only what a dump paused: never the GPU work of a process some other tool holds still.
    auto inRecord = recorded(o.dir, o.pid);
    if (!inRecord.ok()) {
        fprintf(stderr, "criu-amdgpu paused release: %s\n", inRecord.error().describe().c_str());
        return 1;
    }
    if (!*inRecord) {
        fprintf(stderr,
                "criu-amdgpu paused release: process %d is in no dump guardian's record in %s: "
                "only a process a dump recorded as paused is released (criu-amdgpu paused list)\n",
                o.pid, o.dir.c_str());
        return 2;
    }
    hal::BackendRegistry registry;
    registry.discover(hal::defaultBackendDir(*settings, tools::pluginDirOfTool()), *settings,
                      hal::HostServices{});
    auto chosen = registry.select(*settings);
    if (!chosen.ok()) {
        fprintf(stderr,
                "criu-amdgpu paused release: no backend serves this machine: %s (criu-amdgpu "
                "probe says why)\n",
                chosen.error().describe().c_str());
        return 2;
    }
    auto device = (*chosen)->backend->createDevice(hal::DeviceEnv{&*settings, nullptr});
    if (!device.ok()) {
        fprintf(stderr, "criu-amdgpu paused release: the %s backend: %s\n", (*chosen)->name.c_str(),
                device.error().describe().c_str());
        return 2;
    }
    // Pinned now: every step of the release acts on this process, or on none if it exits.
    int pin = coordination::openProcessPin(o.pid);
    auto r = (*device)->releasePaused(o.pid, pin < 0 ? -1 : pin);
    if (pin >= 0)
        close(pin);
    if (!r.ok()) {
        fprintf(stderr, "criu-amdgpu paused release: %s\n", r.error().describe().c_str());
        return 2;
    }
    if (auto forgot = coordination::forgetPausedProcess(o.dir, o.pid); !forgot.ok())
        fprintf(stderr, "criu-amdgpu paused release: %s\n", forgot.error().describe().c_str());
    printf("process %d: %s (%s backend)\n", o.pid, hal::pausedReleaseName(*r),
           (*chosen)->name.c_str());
    return *r == hal::PausedRelease::NoGpu ? 2 : 0;
}

void setup(cmdline::Program& program, cmdline::Command command) {
    auto o = std::make_shared<Options>();
    auto common = [&](cmdline::Command sub) {
        sub.addOption("--dir", o->dir, "where dump guardians keep their records")
            .typeName("DIR")
            .defaultText(coordination::kDefaultGuardianDir);
        sub.addOption("--root", o->root,
                      "the mock GPU machine (default: the mock-root option, if set)")
            .typeName("DIR");
    };
    cmdline::Command listCommand = program.addCommand(
        command, "list", "list the processes whose GPU work a dump left paused",
        "Lists the processes that dump guardians recorded as paused by a criu that has not "
        "finished (while criu runs, and after a criu and its guardian were both killed), and, "
        "on a mock GPU machine, every context whose queues are paused.");
    common(listCommand);
    listCommand.addFlag("--json", o->json, "one JSON object on one line");
    program.onRun(listCommand, [o] { return list(*o); });

    cmdline::Command releaseCommand = program.addCommand(
        command, "release", "let the GPU work of a process run again",
        "Releases the GPU work of process PID that a dead criu left paused, through the backend "
        "the plugin would choose (KFD: AMDKFD_IOC_CRIU_OP UNPAUSE; needs root, and fails while "
        "another tracer such as a running criu holds the process), and removes it from the "
        "guardians' records; a process in no record is refused. Exit 0 when its GPU work runs "
        "(unpaused, or it was not paused, or it exited), 2 when it is in no record, could not "
        "be released or has no GPU work of that backend.");
    common(releaseCommand);
    releaseCommand.addOption("PID", o->pid, "the process").required().range(1, INT32_MAX);
    program.onRun(releaseCommand, [o] { return release(*o); });
}

tools::CommandRegistration reg("paused", "list and release processes whose GPU work is paused",
                               &setup);

} // namespace
