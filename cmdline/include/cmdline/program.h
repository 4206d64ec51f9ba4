#pragma once
/// \file
/// The command line of every program of the project (criu-amdgpu, mockgpu-workload, the e2e
/// workloads), parsed by CLI11 (which only the cmdline library's .cpp files include: the commands
/// declare their options through command.h). A Program is a tree of commands; each leaf has an
/// action. It
/// gives every program the same help layout (help_formatter.h), the same error messages (they
/// name the command and the option) and the same exit codes: 0 for --help, 1 for bad arguments,
/// otherwise what the chosen command's action returns.
///
/// `PROGRAM help` and `PROGRAM COMMAND help` print the help of PROGRAM or COMMAND as --help does,
/// unless COMMAND has a command of its own named help.

#include "cmdline/command.h"

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace cmdline {

/// The exit status of bad arguments, for every program.
inline constexpr int kExitBadArguments = 1;

/// What a command does once its arguments are parsed; returns the exit status.
using Action = std::function<int()>;

class HelpFormatter;

/// A program's commands, their options and actions.
class Program {
public:
    /// `name` is what the user types; `summary` is one line; `details` are paragraphs (separated
    /// by blank lines) that --help prints after the summary.
    Program(const std::string& name, const std::string& summary, const std::string& details = "");
    ~Program();

    /// The program itself: options and commands added here are top-level.
    Command root() { return Command(root_.get()); }

    /// Adds a command to `parent` (the root or another command); at most one command of a parent
    /// is chosen per run. `summary` is its line in the parent's list of commands.
    Command addCommand(Command parent, const std::string& name, const std::string& summary,
                       const std::string& details = "");

    /// Replaces the generated argument synopsis of `command`'s usage line (e.g. to show options
    /// that exclude each other as "(--op OPERATION | --clear)").
    void setUsage(Command command, const std::string& synopsis);

    /// What `command` does when it is the one chosen.
    void onRun(Command command, Action action);

    /// Parses the arguments and runs the chosen command's action. Bad arguments: a message naming
    /// the command and the option on stderr, exit status 1. --help: the help on stdout, 0.
    int run(int argc, const char* const* argv);

private:
    void addHelpAliases(CLI::App& app);
    int reportParseError(const std::string& message) const;

    std::unique_ptr<CLI::App> root_;
    std::shared_ptr<HelpFormatter> formatter_;
    std::map<const CLI::App*, Action> actions_;
};

} // namespace cmdline
