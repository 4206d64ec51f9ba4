#include "config/config.h"
#include "config/option_table.h"
#include "config/options_guide.h"

namespace config {
namespace {

std::string code(std::string_view text) {
    return text.empty() ? std::string("(empty)") : literalSpan(text);
}

// A section of the shared prose as markdown: consecutive numbered items form one list.
void appendSection(std::string& out, const DocSection& section) {
    out += "## " + section.title + "\n\n";
    unsigned number = 0;
    for (const DocBlock& block : section.blocks) {
        if (block.kind == DocBlock::Kind::NumberedItem) {
            out += std::to_string(++number) + ". " + block.text + "\n";
            continue;
        }
        if (number != 0)
            out += "\n";
        number = 0;
        out += block.text + "\n\n";
    }
    if (number != 0)
        out += "\n";
}

void appendSummary(std::string& out) {
    out += "## Summary\n\n"
           "| Option | Type | Default | YAML key | Environment |\n"
           "|---|---|---|---|---|\n";
    for (const OptionSpec& spec : optionTable())
        out += "| [`" + std::string(spec.name) + "`](#" + std::string(spec.name) + ") | " +
               optionTypeName(spec.type) + " | " + code(spec.defaultText) + " | " +
               code(spec.yamlKey) + " | " + optionEnvironmentNames(spec) + " |\n";
    out += "\n";
}

void appendOption(std::string& out, const OptionSpec& spec) {
    out += "### " + std::string(spec.name) + "\n\n" + std::string(spec.help) + "\n\n";
    out += "- Type: " + std::string(optionTypeName(spec.type)) + "\n";
    out += "- Default: " + code(spec.defaultText) + "\n";
    for (const OptionSpelling& spelling : optionSpellings(spec))
        out +=
            "- " + (spelling.source.empty() ? "" : spelling.source + ": ") + spelling.text + "\n";
    out += "\n";
}

void appendTypes(std::string& out) {
    out += "## Value types\n\n";
    for (OptionType type : kOptionTypes)
        out += "- **" + std::string(optionTypeName(type)) + "**: " + optionTypeSyntax(type) + "\n";
    out += "\n";
}

} // namespace

std::string optionsMarkdown() {
    std::string out = "# criu-amdgpu options\n\n"
                      "<!-- Generated from the option table (config/src/option_table.cpp) by "
                      "`criu-amdgpu config help`; do not edit by hand. -->\n\n";
    appendSection(out, optionSourcesSection());
    appendSummary(out);
    out += "## Options\n\n";
    for (const OptionSpec& spec : optionTable())
        appendOption(out, spec);
    appendTypes(out);
    appendSection(out, backendPreferenceSection());
    out.pop_back(); // one newline ends the file
    return out;
}

} // namespace config
