#pragma once
/// \file
/// A command of a Program and its options, as the programs declare them: the project's own small
/// interface over CLI11, which only the cmdline library's .cpp files include (CLI11 costs seconds
/// of compiling in every file that includes it). Each call does what the CLI11 call it names
/// does, so the parsing, the help and the error messages are CLI11's and help_formatter.h's.

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
} // namespace CLI

namespace cmdline {

/// One option of a command (a handle; copies name the same option). Each setter returns the
/// option, so they chain: `command.addOption("--root", root, "...").typeName("DIR").required()`.
class Option {
public:
    /// The VALUE_NAME the help and the errors show ("--root DIR").
    Option& typeName(const std::string& name);
    /// The run fails, naming the option, without it.
    Option& required();
    /// The default the help shows ("(default: ...)").
    Option& defaultText(const std::string& text);
    /// Given only together with `other`.
    Option& needs(const Option& other);
    /// Never given together with `other`.
    Option& excludes(const Option& other);
    /// The value must be one of `values`.
    Option& oneOf(const std::vector<std::string>& values);
    /// The value must be a number from `min` to `max`.
    Option& range(int min, int max);
    /// `check` returns "" for a good value, else why it is not.
    Option& check(std::function<std::string(const std::string&)> check);
    /// As check, and may rewrite the value before it is stored.
    Option& transform(std::function<std::string(std::string&)> transform);
    /// Every value given is kept (for a list), one value after each occurrence of the option.
    Option& takeAll();

private:
    friend class Command;
    explicit Option(CLI::Option* option) : option_(option) {}
    CLI::Option* option_;
};

/// A command of a Program (or the program itself): its options and positional arguments (a name
/// without dashes). A handle; copies name the same command.
class Command {
public:
    /// An option (or positional argument) whose value is stored in `value`.
    Option addOption(const std::string& name, std::string& value, const std::string& help);
    Option addOption(const std::string& name, int& value, const std::string& help);
    Option addOption(const std::string& name, std::vector<std::string>& value,
                     const std::string& help);
    /// An option whose text is given to `store` (which throws Command::badValue for a bad one).
    Option addOption(const std::string& name, std::function<void(const std::string&)> store,
                     const std::string& help);
    /// A flag: `value` is set when given.
    Option addFlag(const std::string& name, bool& value, const std::string& help);

    /// Replaces the paragraphs --help prints after the summary (Program::addCommand's details).
    void setDetails(const std::string& details);

    /// Rejects the value of option `name` from inside an addOption store function: the run fails
    /// with "NAME: MESSAGE".
    [[noreturn]] static void badValue(const std::string& name, const std::string& message);

    /// The CLI11 command, for the cmdline library's own files.
    CLI::App& app() const { return *app_; }

private:
    friend class Program;
    explicit Command(CLI::App* app) : app_(app) {}
    CLI::App* app_;
};

} // namespace cmdline
