#include "help_formatter.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace cmdline {
namespace {

constexpr size_t kWidth = 80;
constexpr size_t kMaxNameColumn = 28;

std::vector<std::string> words(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

// `units` joined by spaces, starting at column `column`, a new line (indented by `indent`) before
// a unit that would pass kWidth.
std::string fill(const std::vector<std::string>& units, size_t column, size_t indent) {
    std::string out;
    for (size_t i = 0; i < units.size(); ++i) {
        if (i > 0 && column + 1 + units[i].size() > kWidth) {
            out += "\n" + std::string(indent, ' ');
            column = indent;
        } else if (i > 0) {
            out += ' ';
            ++column;
        }
        out += units[i];
        column += units[i].size();
    }
    return out;
}

// Paragraphs separated by blank lines, each filled to kWidth and indented by `indent`; a
// paragraph with a line that starts with a space is kept as written.
std::string paragraphs(const std::string& text, size_t indent) {
    std::string out;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find("\n\n", start);
        std::string para = text.substr(start, end == std::string::npos ? end : end - start);
        start = end == std::string::npos ? text.size() : end + 2;
        if (para.empty())
            continue;
        if (!out.empty())
            out += "\n";
        bool preformatted = para[0] == ' ' || para.find("\n ") != std::string::npos;
        if (preformatted) {
            std::istringstream lines(para);
            for (std::string line; std::getline(lines, line);)
                out += std::string(indent, ' ') + line + "\n";
        } else {
            out += std::string(indent, ' ') + fill(words(para), indent, indent) + "\n";
        }
    }
    return out;
}

// Rows "  LEFT  RIGHT", RIGHT filled in its column (on the next line when LEFT is too wide).
std::string table(const std::vector<std::pair<std::string, std::string>>& rows) {
    size_t column = 0;
    for (const auto& [left, right] : rows)
        column = std::max(column, left.size() + 4);
    column = std::min(column, kMaxNameColumn);
    std::string out;
    for (const auto& [left, right] : rows) {
        std::string line = "  " + left;
        if (line.size() + 2 > column) {
            out += line + "\n";
            line = std::string(column, ' ');
        } else {
            line.resize(column, ' ');
        }
        out += line + fill(words(right), column, column) + "\n";
    }
    return out;
}

bool isHelp(const CLI::App* app, const CLI::Option* opt) {
    return opt == app->get_help_ptr() || opt == app->get_help_all_ptr();
}

bool takesValue(const CLI::Option* opt) {
    return opt->get_expected_max() != 0; // flags expect no value
}

bool repeatable(const CLI::Option* opt) {
    return opt->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
}

std::vector<const CLI::Option*> visibleOptions(const CLI::App* app) {
    auto options = app->get_options(
        [](const CLI::Option* opt) { return opt->nonpositional() && !opt->get_group().empty(); });
    // The help flag last: the options of the command come first.
    std::stable_partition(options.begin(), options.end(),
                          [app](const CLI::Option* opt) { return !isHelp(app, opt); });
    return options;
}

} // namespace

std::vector<const CLI::App*> visibleCommands(const CLI::App* app) {
    return app->get_subcommands([](const CLI::App* sub) { return !sub->get_group().empty(); });
}

std::string optionSynopsis(const CLI::Option* opt) {
    std::string name = opt->get_lnames().empty() ? "-" + opt->get_snames().front()
                                                 : "--" + opt->get_lnames().front();
    return takesValue(opt) ? name + " " + opt->get_type_name() : name;
}

std::string fullName(const CLI::App* app) {
    std::string name = app->get_name();
    for (const CLI::App* p = app->get_parent(); p; p = p->get_parent())
        name = p->get_name() + " " + name;
    return name;
}

std::vector<std::string> HelpFormatter::synopsis(const CLI::App* app) const {
    std::vector<std::string> units;
    if (auto it = synopses_.find(app); it != synopses_.end()) {
        // Split where no bracket is open; a value name stays with its option ("--root DIR").
        std::string unit;
        int depth = 0;
        for (char c : it->second + " ") {
            depth += (c == '[' || c == '(') - (c == ']' || c == ')');
            if (c != ' ' || depth > 0) {
                unit += c;
                continue;
            }
            bool value = !unit.empty() && std::string("-[(").find(unit[0]) == std::string::npos;
            if (value && !units.empty() && units.back()[0] == '-')
                units.back() += " " + unit;
            else if (!unit.empty())
                units.push_back(unit);
            unit.clear();
        }
        return units;
    }
    for (const CLI::Option* opt : visibleOptions(app)) {
        if (isHelp(app, opt))
            continue;
        std::string unit = optionSynopsis(opt);
        if (!opt->get_required())
            unit = "[" + unit + "]";
        units.push_back(repeatable(opt) ? unit + "..." : unit);
    }
    if (!visibleCommands(app).empty())
        units.insert(units.end(), {"COMMAND", "[ARGS...]"});
    return units;
}

std::string HelpFormatter::usage(const CLI::App* app, const std::string& name) const {
    std::string head = "usage: " + name;
    std::vector<std::string> units = synopsis(app);
    if (units.empty())
        return head + "\n";
    // Continuation lines start under the first unit, or at a fixed column for long names.
    size_t indent = std::min(head.size() + 1, size_t(32));
    return head + " " + fill(units, head.size() + 1, indent) + "\n";
}

std::string HelpFormatter::commandList(const CLI::App* app) const {
    std::vector<std::pair<std::string, std::string>> rows;
    for (const CLI::App* sub : visibleCommands(app))
        rows.emplace_back(sub->get_name(), sub->get_description());
    return rows.empty() ? "" : "\ncommands:\n" + table(rows);
}

std::string HelpFormatter::optionList(const CLI::App* app) const {
    std::vector<std::pair<std::string, std::string>> rows;
    for (const CLI::Option* opt : visibleOptions(app)) {
        std::string left;
        for (const std::string& s : opt->get_snames())
            left += (left.empty() ? "-" : ", -") + s;
        for (const std::string& l : opt->get_lnames())
            left += (left.empty() ? "--" : ", --") + l;
        if (takesValue(opt))
            left += " " + opt->get_type_name();
        std::string right = opt->get_description();
        if (opt->get_required())
            right += " (required)";
        if (!opt->get_default_str().empty())
            right += " (default: " + opt->get_default_str() + ")";
        if (repeatable(opt))
            right += " (may be repeated)";
        rows.emplace_back(left, right);
    }
    return "\noptions:\n" + table(rows);
}

std::string HelpFormatter::make_help(const CLI::App* app, std::string name,
                                     CLI::AppFormatMode mode) const {
    // The summary, a line in the parent's list of commands, as a sentence.
    std::string summary = app->get_description();
    if (!summary.empty()) {
        summary[0] = static_cast<char>(toupper(static_cast<unsigned char>(summary[0])));
        if (summary.back() != '.')
            summary += '.';
    }
    std::string out = usage(app, name) + "\n" + paragraphs(summary, 0);
    if (!app->get_footer().empty())
        out += "\n" + paragraphs(app->get_footer(), 0);
    bool hasCommands = !visibleCommands(app).empty();
    out += commandList(app);
    // A command that only has commands lists no options: its one option is --help.
    if (!hasCommands || visibleOptions(app).size() > 1)
        out += optionList(app);
    if (!hasCommands)
        return out;
    if (!app->get_parent())
        return out + "\n'" + name + " COMMAND --help' describes one command.\n";
    // Below the program a command's help holds the help of each of its commands, so that
    // `PROGRAM COMMAND --help`, what the man page shows of each command, documents every option.
    for (const CLI::App* sub : visibleCommands(app))
        out += "\n" + make_help(sub, name + " " + sub->get_name(), mode);
    return out;
}

} // namespace cmdline
