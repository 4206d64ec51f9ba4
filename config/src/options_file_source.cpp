#include "config/sources.h"
#include "config/suggestions.h"

#include <cctype>

namespace config {
namespace {

// Splits one line the way criu splits its config files: whitespace separates words, '"' or '\''
// quote (also inside a word), '#' at the start of a word comments out the rest of the line.
base::Result<std::vector<std::string>> splitWords(std::string_view line, const std::string& where) {
    std::vector<std::string> words;
    std::string word;
    bool inWord = false;
    char quote = 0;
    for (char c : line) {
        if (quote) {
            if (c == quote)
                quote = 0;
            else
                word += c;
            continue;
        }
        if (isspace(static_cast<unsigned char>(c))) {
            if (inWord)
                words.push_back(std::move(word));
            word.clear();
            inWord = false;
            continue;
        }
        if (c == '#' && !inWord)
            break;
        inWord = true;
        if (c == '"' || c == '\'')
            quote = c;
        else
            word += c;
    }
    if (quote)
        return base::makeError(base::ErrorCode::Config, "%s: unterminated %c quote", where.c_str(),
                               quote);
    if (inWord)
        words.push_back(std::move(word));
    return words;
}

base::Error notAPluginOption(const std::string& where, const std::string& option,
                             const std::string& value) {
    std::string hint;
    if (findOption(option))
        hint = "; write 'plugin-opt amdgpu:" + option + (value.empty() ? "" : "=" + value) + "'";
    else if (std::string near = nearestName(option, {"plugin-opt", "plugin-option"}); !near.empty())
        hint = "; did you mean '" + near + "'?";
    return base::makeError(base::ErrorCode::Config,
                           "%s: '%s' is not a plugin option; this file holds only "
                           "'plugin-opt amdgpu:NAME[=VALUE]' lines%s",
                           where.c_str(), option.c_str(), hint.c_str());
}

// One line's assignment, if the line sets an amdgpu option.
base::Result<std::vector<Assignment>> parseLine(std::string_view line, const std::string& where) {
    HAL_TRY_ASSIGN(auto words, splitWords(line, where));
    if (words.empty())
        return std::vector<Assignment>{};
    std::string option = words[0];
    if (option.compare(0, 2, "--") == 0)
        option.erase(0, 2);
    std::string argument;
    bool inlineArgument = false;
    if (size_t eq = option.find('='); eq != std::string::npos) {
        argument = option.substr(eq + 1);
        option.erase(eq);
        inlineArgument = true;
    }
    if (option != "plugin-opt" && option != "plugin-option")
        return notAPluginOption(where, option, argument);
    size_t next = 1;
    if (!inlineArgument) {
        if (words.size() < 2)
            return base::makeError(base::ErrorCode::Config,
                                   "%s: %s needs an argument: amdgpu:NAME[=VALUE]", where.c_str(),
                                   option.c_str());
        argument = words[1];
        next = 2;
    }
    if (words.size() > next)
        return base::makeError(base::ErrorCode::Config,
                               "%s: unexpected '%s' after '%s' (write NAME=VALUE as one word)",
                               where.c_str(), words[next].c_str(), argument.c_str());
    PluginOptionText parts;
    if (!splitPluginOption(argument, &parts))
        return base::makeError(base::ErrorCode::Config,
                               "%s: '%s' is not PLUGIN:NAME[=VALUE] (e.g. amdgpu:numa-check=0)",
                               where.c_str(), argument.c_str());
    if (!isAmdgpuPlugin(parts.plugin))
        return std::vector<Assignment>{};
    HAL_TRY_ASSIGN(auto a, assignmentFromPluginOption(parts, SourceKind::OptionsFile, where));
    return std::vector<Assignment>{std::move(a)};
}

} // namespace

base::Result<std::vector<Assignment>> parseOptionsText(const std::string& text,
                                                       const std::string& fileName) {
    std::vector<Assignment> assignments;
    size_t start = 0;
    for (int lineNo = 1; start < text.size(); ++lineNo) {
        size_t end = text.find('\n', start);
        std::string_view line = std::string_view(text).substr(
            start, end == std::string::npos ? std::string::npos : end - start);
        std::string where = fileName + ":" + std::to_string(lineNo);
        HAL_TRY_ASSIGN(auto lineAssignments, parseLine(line, where));
        for (Assignment& a : lineAssignments)
            assignments.push_back(std::move(a));
        if (end == std::string::npos)
            break;
        start = end + 1;
    }
    return assignments;
}

base::Result<FileAssignments> readOptionsFile(const std::string& path, bool mustExist) {
    FileAssignments result;
    std::string text;
    HAL_TRY_ASSIGN(result.present,
                   readTextFile(path, mustExist, "options file", "options-file", &text));
    if (result.present) {
        HAL_TRY_ASSIGN(result.entries, parseOptionsText(text, path));
    }
    return result;
}

} // namespace config
