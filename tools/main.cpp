#include "command.h"

#include <map>
#include <string>

namespace tools {
namespace {

struct Command {
    const char* summary;
    CommandSetup setup;
};

// By name, so the usage lists the commands in alphabetical order.
std::map<std::string, Command>& commands() {
    static std::map<std::string, Command> table;
    return table;
}

} // namespace

CommandRegistration::CommandRegistration(const char* name, const char* summary,
                                         CommandSetup setup) {
    commands()[name] = Command{summary, setup};
}

} // namespace tools

int main(int argc, char** argv) {
    cmdline::Program program(
        "criu-amdgpu", "Inspect what the criu amdgpu plugin would do on this machine.",
        "It loads the same backends and reads the same configuration as amdgpu_plugin.so: which "
        "backend serves this machine, what every option is set to and where that came from, "
        "which GPUs there are, and whether a checkpoint from another machine can be restored "
        "here. It also sets up the mock GPU, a simulated GPU for trying checkpoints without AMD "
        "hardware.");
    for (const auto& [name, command] : tools::commands())
        command.setup(program, program.addCommand(program.root(), name, command.summary));
    return program.run(argc, argv);
}
