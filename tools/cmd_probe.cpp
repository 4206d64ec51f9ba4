// criu-amdgpu probe: every backend found, its probe answer and reason, what this kernel can do
// for each GPU (kernel_report.h), and the backend the plugin would choose with the current
// configuration.
#include "command.h"
#include "json_output.h"
#include "kernel_report.h"

#include "config/config.h"
#include "hal/registry.h"

#include <cstdio>
#include <filesystem>
#include <memory>

namespace {

struct Options {
    bool json = false;
    std::string backendDir; ///< replaces the configured backend directory when not empty
};

/// <dir of this executable>/../lib/criu: the plugin directory of the installed (and build) layout.
std::string pluginDirNextToTool() {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
        return "lib/criu";
    return (exe.parent_path().parent_path() / "lib" / "criu").string();
}

/// The --json object, keys in this order:
///   backend_dir  string: the directory the backends were loaded from
///   backends     array, one object per library found: path (string), name (string), loaded
///                (bool), then either skipped (string: why it was not loaded) or present (bool),
///                priority (integer), reason (string) and capabilities (array of strings)
///   kernel       object: what this kernel can do per GPU (tools::kernelReportJson)
///   chosen       string: the backend the plugin would choose, "" when none would
///   error        string, only when none would: why
tools::Json probeJson(const std::string& dir, const hal::BackendRegistry& registry,
                      const tools::KernelReport& kernel,
                      const base::Result<hal::BackendCandidate*>& chosen) {
    tools::Json out;
    out["backend_dir"] = dir;
    out["backends"] = tools::Json::array();
    for (const hal::BackendCandidate& c : registry.candidates()) {
        tools::Json b;
        b["path"] = c.path;
        b["name"] = c.name;
        b["loaded"] = c.loaded;
        if (!c.loaded) {
            b["skipped"] = c.skipReason;
        } else {
            b["present"] = c.probe.present;
            b["priority"] = c.probe.priority;
            b["reason"] = c.probe.reason;
            b["capabilities"] = c.probe.capabilities;
        }
        out["backends"].push_back(std::move(b));
    }
    out["kernel"] = tools::kernelReportJson(kernel);
    out["chosen"] = chosen.ok() ? chosen.value()->name : "";
    if (!chosen.ok())
        out["error"] = chosen.error().describe();
    return out;
}

int run(const Options& options) {
    auto settings = config::loadSettings(config::Sources::fromProcessEnvironment());
    if (!settings.ok()) {
        fprintf(stderr, "criu-amdgpu probe: %s\n", settings.error().describe().c_str());
        return tools::kExitBadInput;
    }
    if (!options.backendDir.empty())
        settings->backendDir = options.backendDir;
    std::string dir = hal::defaultBackendDir(*settings, pluginDirNextToTool());
    hal::BackendRegistry registry;
    registry.discover(dir, *settings, hal::HostServices{});
    auto chosen = registry.select(*settings);
    tools::KernelReport kernel =
        tools::probeKernel(settings->devRoot, drm::Paths::fromSettings(*settings),
                           chosen.ok() ? chosen.value()->name : "");

    if (options.json) {
        tools::printJson(probeJson(dir, registry, kernel, chosen));
        return chosen.ok() ? 0 : 2;
    }

    printf("backends in %s:\n", dir.c_str());
    if (registry.candidates().empty())
        printf("  (none)\n");
    for (const hal::BackendCandidate& c : registry.candidates()) {
        if (!c.loaded) {
            printf("  %-12s skipped: %s (%s)\n", c.name.empty() ? "?" : c.name.c_str(),
                   c.skipReason.c_str(), c.path.c_str());
            continue;
        }
        std::string caps;
        for (const std::string& cap : c.probe.capabilities)
            caps += (caps.empty() ? "" : ",") + cap;
        if (c.probe.present)
            printf("  %-12s present, priority %d [%s]: %s\n", c.name.c_str(), c.probe.priority,
                   caps.c_str(), c.probe.reason.c_str());
        else
            printf("  %-12s not present: %s\n", c.name.c_str(), c.probe.reason.c_str());
    }
    for (const std::string& line : tools::kernelReportText(kernel))
        printf("%s\n", line.c_str());
    if (chosen.ok()) {
        printf("chosen: %s\n", chosen.value()->name.c_str());
        return 0;
    }
    printf("chosen: none: %s\n", chosen.error().describe().c_str());
    return 2;
}

void setup(cmdline::Program& program, cmdline::Command command) {
    command.setDetails(
        "Loads every backend library (default: the backend-dir option, else "
        "<prefix>/lib/criu/amdgpu next to this tool), asks each whether it can serve "
        "this machine, asks the kernel what it can do for each GPU (KFD and its "
        "ioctl version, the KFD CRIU op, GEM_LIST_HANDLES, GET_MAPPING_INFO, "
        "GEM_CHANGE_HANDLE; on a DRM file of its own, touching no process) and which "
        "backend a dump and a restore of it would use, and says which one the plugin "
        "would choose with the current "
        "configuration (environment, /etc/criu/amdgpu.yaml, /etc/criu/amdgpu.conf).\n\n"
        "Exit status: 0 when a backend would be chosen, 2 when none would, 1 on bad "
        "input.");
    auto options = std::make_shared<Options>();
    command.addFlag("--json", options->json, "print one JSON object instead of the text");
    command.addOption("--backend-dir", options->backendDir, "load the backends from DIR")
        .typeName("DIR");
    program.onRun(command, [options] { return run(*options); });
}

tools::CommandRegistration reg("probe", "list the backends, their probe answers, and the choice",
                               &setup);

} // namespace
