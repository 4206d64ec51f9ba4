// criu-amdgpu config: shows the effective configuration and prints the options documentation.
#include "command.h"

#include "config/config.h"

#include <cstdio>
#include <cstring>

namespace {

void usage(FILE* out) {
    fprintf(out,
            "usage: criu-amdgpu config show [--json] [--plugin-option amdgpu.NAME=VALUE]...\n"
            "       criu-amdgpu config help\n\n"
            "  show   every option's effective value and where it came from (defaults, the YAML\n"
            "         file, the options file, the environment, and the plugin options given\n"
            "         here as criu would pass them)\n"
            "  help   the options documentation (markdown), generated from the option table\n");
}

int show(const std::vector<std::string>& args) {
    bool json = false;
    config::Sources sources = config::Sources::fromProcessEnvironment();
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg == "--json") {
            json = true;
        } else if (arg == "--plugin-option" && i + 1 < args.size()) {
            sources.pluginOptions.push_back(args[++i]);
        } else if (arg.rfind("--plugin-option=", 0) == 0) {
            sources.pluginOptions.push_back(arg.substr(strlen("--plugin-option=")));
        } else if (arg == "--help" || arg == "-h") {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "criu-amdgpu config show: unexpected argument '%s'\n", arg.c_str());
            usage(stderr);
            return 1;
        }
    }
    auto loaded = config::loadConfig(sources);
    if (!loaded.ok()) {
        fprintf(stderr, "criu-amdgpu config: %s\n", loaded.error().describe().c_str());
        return 1;
    }
    std::string text = json ? config::formatShowJson(*loaded) : config::formatShowTable(*loaded);
    fputs(text.c_str(), stdout);
    return 0;
}

int run(const std::vector<std::string>& args) {
    if (args.empty()) {
        usage(stderr);
        return 1;
    }
    if (args[0] == "show")
        return show(std::vector<std::string>(args.begin() + 1, args.end()));
    if (args[0] == "help" && args.size() == 1) {
        fputs(config::optionsMarkdown().c_str(), stdout);
        return 0;
    }
    if (args[0] == "--help" || args[0] == "-h") {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "criu-amdgpu config: unknown subcommand '%s'\n", args[0].c_str());
    usage(stderr);
    return 1;
}

tools::CommandRegistration reg("config", "show the effective configuration; document the options",
                               &run);

} // namespace
