// criu-amdgpu probe: every backend found, its probe answer and reason, and the one the plugin
// would choose with the current configuration.
#include "command.h"
#include "json_writer.h"

#include "config/config.h"
#include "hal/registry.h"

#include <cstdio>
#include <filesystem>

namespace {

void usage(FILE* out) {
    fprintf(out,
            "usage: criu-amdgpu probe [--json] [--backend-dir DIR]\n\n"
            "Loads every backend library (default: the backend-dir option, else\n"
            "<prefix>/lib/criu/amdgpu next to this tool), asks each whether it can serve this\n"
            "machine, and says which one the plugin would choose with the current\n"
            "configuration (environment, /etc/criu/amdgpu.yaml, /etc/criu/amdgpu.conf).\n"
            "Exit status: 0 when a backend would be chosen, 2 when none would, 1 on bad input.\n");
}

/// <dir of this executable>/../lib/criu: the plugin directory of the installed (and build) layout.
std::string pluginDirNextToTool() {
    std::error_code ec;
    auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec)
        return "lib/criu";
    return (exe.parent_path().parent_path() / "lib" / "criu").string();
}

int run(const std::vector<std::string>& args) {
    bool json = false;
    std::string dirOverride;
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--json") {
            json = true;
        } else if (args[i] == "--backend-dir" && i + 1 < args.size()) {
            dirOverride = args[++i];
        } else if (args[i] == "--help" || args[i] == "-h") {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "criu-amdgpu probe: unexpected argument '%s'\n", args[i].c_str());
            usage(stderr);
            return 1;
        }
    }
    auto settings = config::loadSettings(config::Sources::fromProcessEnvironment());
    if (!settings.ok()) {
        fprintf(stderr, "criu-amdgpu probe: %s\n", settings.error().describe().c_str());
        return 1;
    }
    if (!dirOverride.empty())
        settings->backendDir = dirOverride;
    std::string dir = hal::defaultBackendDir(*settings, pluginDirNextToTool());
    hal::BackendRegistry registry;
    registry.discover(dir, *settings, hal::HostServices{});
    auto chosen = registry.select(*settings);

    if (json) {
        tools::JsonWriter w;
        w.beginObject().key("backend_dir").value(dir).key("backends").beginArray();
        for (const hal::BackendCandidate& c : registry.candidates()) {
            w.beginObject().key("path").value(c.path).key("name").value(c.name);
            w.key("loaded").value(c.loaded);
            if (!c.loaded) {
                w.key("skipped").value(c.skipReason);
            } else {
                w.key("present").value(c.probe.present).key("priority").value(c.probe.priority);
                w.key("reason").value(c.probe.reason).key("capabilities").beginArray();
                for (const std::string& cap : c.probe.capabilities)
                    w.value(cap);
                w.endArray();
            }
            w.endObject();
        }
        w.endArray().key("chosen");
        if (chosen.ok())
            w.value(chosen.value()->name);
        else
            w.value(std::string_view()).key("error").value(chosen.error().describe());
        w.endObject();
        printf("%s\n", w.str().c_str());
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
    if (chosen.ok()) {
        printf("chosen: %s\n", chosen.value()->name.c_str());
        return 0;
    }
    printf("chosen: none: %s\n", chosen.error().describe().c_str());
    return 2;
}

tools::CommandRegistration reg("probe", "list the backends, their probe answers, and the choice",
                               &run);

} // namespace
