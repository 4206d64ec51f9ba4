#pragma once
/// \file
/// Subcommands of criu-amdgpu. Each cmd_*.cpp defines one and registers it with a static
/// CommandRegistration; main dispatches on the first argument.

#include <string>
#include <vector>

namespace tools {

/// A subcommand: receives the arguments after its name; returns the process exit code.
using CommandFn = int (*)(const std::vector<std::string>& args);

/// Registers a subcommand at static-initialisation time.
struct CommandRegistration {
    CommandRegistration(const char* name, const char* summary, CommandFn fn);
};

} // namespace tools
