#pragma once
/// \file
/// Subcommands of criu-amdgpu. Each cmd_*.cpp defines one and registers it with a static
/// CommandRegistration; main makes the command and lets its setup declare the options, the
/// commands under it and what each does (cmdline::Program::onRun).

// The options are declared through cmdline/command.h: no file of the tool includes CLI11 (seconds
// of compiling in each file that includes it).
#include "cmdline/program.h"

namespace tools {

/// The exit status of bad input, for every subcommand (as for bad arguments).
inline constexpr int kExitBadInput = cmdline::kExitBadArguments;

/// Declares a subcommand's options, commands and actions on `command`.
using CommandSetup = void (*)(cmdline::Program& program, cmdline::Command command);

/// Registers a subcommand at static-initialisation time; `summary` is its line in the usage.
struct CommandRegistration {
    CommandRegistration(const char* name, const char* summary, CommandSetup setup);
};

} // namespace tools
