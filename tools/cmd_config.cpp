// criu-amdgpu config: shows the effective configuration and prints the options documentation.
#include "command.h"

#include "config/config.h"

#include <cstdio>
#include <memory>

namespace {

struct ShowOptions {
    bool json = false;
    std::vector<std::string> pluginOptions; ///< as criu passes them: amdgpu.NAME=VALUE
};

int show(const ShowOptions& options) {
    config::Sources sources = config::Sources::fromProcessEnvironment();
    sources.pluginOptions = options.pluginOptions;
    auto loaded = config::loadConfig(sources);
    if (!loaded.ok()) {
        fprintf(stderr, "criu-amdgpu config show: %s\n", loaded.error().describe().c_str());
        return tools::kExitBadInput;
    }
    // --json: config::formatShowJson documents the object.
    std::string text =
        options.json ? config::formatShowJson(*loaded) : config::formatShowTable(*loaded);
    fputs(text.c_str(), stdout);
    return 0;
}

void setup(cmdline::Program& program, cmdline::Command command) {
    cmdline::Command showCommand = program.addCommand(
        command, "show", "every option's effective value and where it came from",
        "The sources are the defaults, the YAML file, the options file, the environment, and "
        "the plugin options given here as criu would pass them, in that order of precedence.");
    auto options = std::make_shared<ShowOptions>();
    showCommand.addFlag("--json", options->json, "print one JSON object instead of the table");
    showCommand
        .addOption("--plugin-option", options->pluginOptions,
                   "a plugin option as criu's --plugin-option passes it")
        .typeName("amdgpu.NAME=VALUE")
        .takeAll();
    program.onRun(showCommand, [options] { return show(*options); });

    cmdline::Command helpCommand = program.addCommand(
        command, "help", "the options documentation (markdown), generated from the option table");
    program.onRun(helpCommand, [] {
        fputs(config::optionsMarkdown().c_str(), stdout);
        return 0;
    });
}

tools::CommandRegistration reg("config", "show the effective configuration; document the options",
                               &setup);

} // namespace
