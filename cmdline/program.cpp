#include "cmdline/program.h"

#include "help_formatter.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>

namespace cmdline {
namespace {

// The command the arguments chose: the last of the chain of parsed commands.
const CLI::App* chosenCommand(const CLI::App* app) {
    while (!app->get_subcommands().empty())
        app = app->get_subcommands().front();
    return app;
}

bool isHelpAlias(const CLI::App* app) {
    return app->get_name() == "help" && app->get_group().empty();
}

// The chain of commands from the program to `app`.
std::vector<const CLI::App*> pathTo(const CLI::App* app) {
    std::vector<const CLI::App*> path;
    for (; app; app = app->get_parent())
        path.insert(path.begin(), app);
    return path;
}

// "--root DIR is required" for every required option the chosen commands did not get, one a
// line; empty when none is missing.
std::string missingOptions(const CLI::App* command) {
    std::string out;
    for (const CLI::App* app : pathTo(command))
        for (const CLI::Option* opt : app->get_options())
            if (opt->get_required() && opt->count() == 0)
                out += (out.empty() ? "" : "\n") + optionSynopsis(opt) + " is required";
    return out;
}

// CLI11 says "--gpus: 1 required N missing" when an option is last without its value; this says
// "--gpus needs a value (N)". Other mismatches keep CLI11's words.
std::string mismatch(const CLI::App* command, const std::string& message) {
    for (const CLI::App* app : pathTo(command))
        for (const CLI::Option* opt : app->get_options())
            if (message == opt->get_name() + ": 1 required " + opt->get_type_name() + " missing")
                return opt->get_name() + " needs a value (" + opt->get_type_name() + ")";
    return message;
}

} // namespace

Program::Program(const std::string& name, const std::string& summary, const std::string& details)
    : root_(std::make_unique<CLI::App>(summary, name)),
      formatter_(std::make_shared<HelpFormatter>()) {
    root_->formatter(formatter_);
    root_->footer(details);
    // Arguments no command knows are reported by run(), in the project's words.
    root_->allow_extras();
    root_->set_help_flag("-h,--help", "print this help and exit");
    // As with most programs, an option given twice takes its last value.
    root_->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

Program::~Program() = default;

Command Program::addCommand(Command parent, const std::string& name, const std::string& summary,
                            const std::string& details) {
    // One command per run: "probe config" is probe with an unexpected argument.
    parent.app().require_subcommand(0, 1);
    CLI::App* command = parent.app().add_subcommand(name, summary);
    command->footer(details);
    return Command(command);
}

void Program::setUsage(Command command, const std::string& synopsis) {
    formatter_->setSynopsis(&command.app(), synopsis);
}

void Program::onRun(Command command, Action action) {
    actions_[&command.app()] = std::move(action);
}

void Program::addHelpAliases(CLI::App& app) {
    auto commands = app.get_subcommands([](CLI::App*) { return true; });
    if (commands.empty())
        return;
    bool ownHelp = false;
    for (CLI::App* command : commands) {
        addHelpAliases(*command);
        ownHelp = ownHelp || command->get_name() == "help";
    }
    if (!ownHelp)
        app.add_subcommand("help", "print this help and exit")->group("");
}

int Program::reportParseError(const std::string& message) const {
    const CLI::App* command = chosenCommand(root_.get());
    std::string name = fullName(command), text;
    for (size_t start = 0; start < message.size();) { // each line of the message
        size_t end = std::min(message.find('\n', start), message.size());
        text += name + ": " + message.substr(start, end - start) + "\n";
        start = end + 1;
    }
    text += formatter_->usage(command, name);
    if (!visibleCommands(command).empty())
        text += formatter_->commandList(command);
    fputs(text.c_str(), stderr);
    return kExitBadArguments;
}

int Program::run(int argc, const char* const* argv) {
    addHelpAliases(*root_);
    try {
        root_->parse(argc, argv);
    } catch (const CLI::Success&) { // --help
        const CLI::App* command = chosenCommand(root_.get());
        fputs(formatter_->make_help(command, fullName(command), CLI::AppFormatMode::Normal).c_str(),
              stdout);
        return 0;
    } catch (const CLI::RequiredError& e) {
        std::string missing = missingOptions(chosenCommand(root_.get()));
        return reportParseError(missing.empty() ? e.what() : missing);
    } catch (const CLI::ArgumentMismatch& e) {
        return reportParseError(mismatch(chosenCommand(root_.get()), e.what()));
    } catch (const CLI::ParseError& e) {
        return reportParseError(e.what());
    }
    const CLI::App* command = chosenCommand(root_.get());
    if (isHelpAlias(command)) {
        const CLI::App* parent = command->get_parent();
        fputs(formatter_->make_help(parent, fullName(parent), CLI::AppFormatMode::Normal).c_str(),
              stdout);
        return 0;
    }
    for (const CLI::App* app : pathTo(command)) {
        std::vector<std::string> extra = app->remaining();
        if (extra.empty())
            continue;
        bool wantsCommand = app == command && !visibleCommands(app).empty();
        return reportParseError((wantsCommand ? "unknown command '" : "unexpected argument '") +
                                extra.front() + "'");
    }
    auto action = actions_.find(command);
    if (action == actions_.end()) // a command that has commands, given none
        return reportParseError("COMMAND is required");
    return action->second();
}

} // namespace cmdline
