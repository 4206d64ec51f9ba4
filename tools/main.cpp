#include "command.h"

#include <cstdio>
#include <cstring>
#include <map>

namespace tools {
namespace {

struct Command {
    const char* summary;
    CommandFn fn;
};

std::map<std::string, Command>& commands() {
    static std::map<std::string, Command> table;
    return table;
}

void usage(FILE* out) {
    fprintf(out, "usage: criu-amdgpu COMMAND [ARGS...]\n\ncommands:\n");
    for (const auto& [name, cmd] : commands())
        fprintf(out, "  %-10s %s\n", name.c_str(), cmd.summary);
    fprintf(out, "\n'criu-amdgpu COMMAND --help' describes one command.\n");
}

} // namespace

CommandRegistration::CommandRegistration(const char* name, const char* summary, CommandFn fn) {
    commands()[name] = Command{summary, fn};
}

} // namespace tools

int main(int argc, char** argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        tools::usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 1 : 0;
    }
    auto it = tools::commands().find(argv[1]);
    if (it == tools::commands().end()) {
        fprintf(stderr, "criu-amdgpu: unknown command '%s'\n", argv[1]);
        tools::usage(stderr);
        return 1;
    }
    return it->second.fn(std::vector<std::string>(argv + 2, argv + argc));
}
