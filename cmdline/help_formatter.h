#pragma once
/// \file
/// The --help layout of every program, for people and for the man pages made from it:
///
///     usage: PROGRAM COMMAND --option VALUE [--flag]...
///
///     Summary, then the details, wrapped to 80 columns.
///
///     commands:
///       name      its summary
///
///     options:
///       --option VALUE  what it does (default: ...)
///       -h, --help      print this help and exit
///
/// The program's help ends with "'PROGRAM COMMAND --help' describes one command."; the help of a
/// command that has commands ends with the help of each of them.
/// Lines of the details that start with a space are kept as written (lists, examples).

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <vector>

namespace cmdline {

/// CLI11's formatter, replaced whole: one formatter serves a program and all its commands.
class HelpFormatter : public CLI::Formatter {
public:
    /// The help of `app`, whose full name (the program and the commands to it) is `name`.
    std::string make_help(const CLI::App* app, std::string name,
                          CLI::AppFormatMode mode) const override;

    /// The usage line(s) of `app`: "usage: NAME SYNOPSIS", wrapped.
    std::string usage(const CLI::App* app, const std::string& name) const;

    /// Replaces the synopsis generated from `app`'s options and commands.
    void setSynopsis(const CLI::App* app, const std::string& synopsis) {
        synopses_[app] = synopsis;
    }

    /// "\ncommands:\n" and a line per visible command of `app` ("" when it has none).
    std::string commandList(const CLI::App* app) const;

private:
    std::vector<std::string> synopsis(const CLI::App* app) const;
    std::string optionList(const CLI::App* app) const;

    std::map<const CLI::App*, std::string> synopses_;
};

/// The commands of `app` a user sees (not the hidden help aliases), in the order added.
std::vector<const CLI::App*> visibleCommands(const CLI::App* app);

/// "--root DIR" for an option that takes a value, "--json" for a flag.
std::string optionSynopsis(const CLI::Option* opt);

/// `app`'s full name: the program's name and the commands leading to it ("criu-amdgpu mock init").
std::string fullName(const CLI::App* app);

} // namespace cmdline
