// criu-amdgpu-options(5), from the option table and the shared prose of docs/options.md.
#include "examples.h"
#include "pages.h"
#include "roff.h"

#include "config/config.h"
#include "config/option_table.h"
#include "config/options_guide.h"
#include "config/value_parsers.h"

namespace man {
namespace {

using config::OptionSpec;
using config::SourceKind;

std::string upper(std::string text) {
    for (char& c : text)
        if (c >= 'a' && c <= 'z')
            c = static_cast<char>(c - 'a' + 'A');
    return text;
}

std::string section(const config::DocSection& s) {
    std::string out = sectionHeading(upper(s.title));
    unsigned number = 0;
    for (const config::DocBlock& block : s.blocks) {
        if (block.kind == config::DocBlock::Kind::NumberedItem) {
            out += listItem(std::to_string(++number) + ".", block.text);
        } else {
            number = 0;
            out += paragraph(block.text);
        }
    }
    return out;
}

std::string option(const OptionSpec& spec) {
    std::string tag =
        bold(spec.name) + " " + italic(config::optionTypeName(spec.type)) +
        " (default: " + (spec.defaultText.empty() ? "empty" : bold(spec.defaultText)) + ")";
    std::string out = taggedParagraph(tag, spec.help) + ".IP\n";
    std::string separator;
    for (const config::OptionSpelling& spelling : config::optionSpellings(spec)) {
        out += separator + markup(spelling.source.empty() ? spelling.text
                                                          : spelling.source + ": " + spelling.text);
        separator = "\n.br\n";
    }
    return out + "\n";
}

std::string valueTypes() {
    std::string out = sectionHeading("VALUE TYPES");
    for (config::OptionType type : config::kOptionTypes)
        out +=
            taggedParagraph(italic(config::optionTypeName(type)), config::optionTypeSyntax(type));
    return out;
}

std::string environment() {
    std::string out = sectionHeading("ENVIRONMENT");
    out += paragraph("criu passes its environment to the plugin. Each option has a variable "
                     "`CRIU_AMDGPU_` + its name in UPPER_SNAKE; the checks and the buffer size "
                     "also answer to the `KFD_*` names of criu's own amdgpu plugin, so existing "
                     "settings keep working. When both are set the `CRIU_AMDGPU_*` variable "
                     "wins. An unknown `CRIU_AMDGPU_*` variable is an error.");
    for (const OptionSpec& spec : config::optionTable()) {
        if (!spec.allows(SourceKind::Env))
            continue;
        std::string name(spec.name);
        out += taggedParagraph(bold(spec.envName), "Sets `" + name + "`.");
    }
    for (const OptionSpec& spec : config::optionTable()) {
        if (!spec.allows(SourceKind::Env) || spec.legacyEnv.empty())
            continue;
        out += taggedParagraph(bold(spec.legacyEnv), "Sets `" + std::string(spec.name) +
                                                         "`, as in criu's own amdgpu "
                                                         "plugin; `" +
                                                         std::string(spec.envName) +
                                                         "` wins when both are set.");
    }
    return out;
}

std::string files(const Layout& layout) {
    config::Sources defaults;
    std::string out = sectionHeading("FILES");
    out += taggedParagraph(bold(defaults.defaultYamlPath),
                           "The YAML file read when `CRIU_AMDGPU_CONFIG` and the plugin option "
                           "`amdgpu.config` name none. It need not exist.");
    out += taggedParagraph(bold(defaults.defaultOptionsPath),
                           "The options file read when nothing names one. It need not exist.");
    out += taggedParagraph(bold(layout.pluginDir + "/amdgpu_plugin.so"), "The plugin.");
    out += taggedParagraph(bold(layout.pluginDir + "/amdgpu/"),
                           "The backends: `kfd.so` (/dev/kfd), `amdgpu-drm.so` (render nodes "
                           "only) and, from the package criu-amdgpu-mock, `mock.so` (a simulated "
                           "GPU). They never sit beside the plugin, where criu would load them as "
                           "plugins.");
    out += taggedParagraph(bold(layout.docDir + "/examples/amdgpu.yaml"),
                           "Every option the YAML file can set, at its default, commented out.");
    return out;
}

std::string examples() {
    config::Sources defaults;
    std::string out = sectionHeading("EXAMPLES");
    for (const ConfigExample& e : configExamples()) {
        out += subsectionHeading(e.title) + paragraph(e.text);
        std::string env;
        for (const auto& [name, value] : e.env)
            env += name + "=" + value + " ";
        out += paragraph("In criu's environment:") + example(env + "criu restore -D IMAGES ...");
        out += paragraph("Or in " + defaults.defaultYamlPath + ":") + example(e.yaml);
        out += paragraph("Or in " + defaults.defaultOptionsPath + ":") + example(e.optionsFile);
        out += paragraph("Or, with a criu that has plugin options (4.3 and later), on its "
                         "command line:") +
               example("criu restore -D IMAGES --plugin-option " + e.pluginOption + " ...");
        if (!e.after.empty())
            out += paragraph(e.after);
    }
    return out;
}

// The value the example file shows where it cannot show the default (exampleShowsDefault): a
// log level, or the empty path (read no file).
std::string exampleValue(config::OptionType type) {
    return type == config::OptionType::LogLevel ? "info" : "\"\"";
}

} // namespace

std::string optionsPage(const Layout& layout) {
    config::Sources defaults;
    std::string out = titleLine("criu-amdgpu-options", 5, layout.version, "File Formats");
    out += sectionHeading("NAME") +
           escape("criu-amdgpu-options - options of the criu amdgpu plugin: configuration "
                  "files, environment and plugin options") +
           "\n";
    out += sectionHeading("SYNOPSIS") + ".nf\n" + escape(defaults.defaultYamlPath) + "\n" +
           escape(defaults.defaultOptionsPath) + "\n" + bold("CRIU_AMDGPU_") + italic("NAME") +
           "=" + italic("VALUE") + " " + bold("criu") + " ...\n" + bold("criu") + " ... " +
           bold("--plugin-option amdgpu.") + italic("NAME") + "=" + italic("VALUE") + "\n.fi\n";
    out += sectionHeading("DESCRIPTION") +
           paragraph("`amdgpu_plugin.so` lets criu(8) checkpoint and restore processes that use "
                     "AMD GPUs. criu loads every plugin in the directory its `-L` option names, "
                     "else in its default plugin directory, /usr/lib/criu; this installation "
                     "put the plugin in " +
                     layout.pluginDir + " and its backends in " + layout.pluginDir +
                     "/amdgpu. The options below steer both the plugin and "
                     "criu-amdgpu(1), which reads the same sources to show what the plugin "
                     "would do.") +
           paragraph("This page is generated from the plugin's option table, as is "
                     "docs/options.md in the source.");
    out += section(config::optionSourcesSection());
    out += sectionHeading("OPTIONS");
    for (const OptionSpec& spec : config::optionTable())
        out += option(spec);
    out += valueTypes();
    out += section(config::backendPreferenceSection());
    out += environment();
    out += files(layout);
    out += examples();
    out += sectionHeading("SEE ALSO") + bold("criu-amdgpu") + "(1), " + bold("criu") + "(8)\n";
    return out;
}

bool exampleShowsDefault(const config::OptionSpec& spec) {
    // The log level's "unset" is no value; a file named in the YAML file must exist, while the
    // default file need not.
    return config::parseValue(spec.type, spec.defaultText) &&
           !(spec.type == config::OptionType::Path && !spec.defaultText.empty());
}

std::string exampleYaml() {
    std::string out = "# criu-amdgpu: the YAML configuration of the criu amdgpu plugin\n"
                      "# (/etc/criu/amdgpu.yaml). Every option is shown at its default,\n"
                      "# commented out; see criu-amdgpu-options(5).\n";
    for (const OptionSpec& spec : config::optionTable()) {
        if (!spec.allows(SourceKind::Yaml))
            continue;
        out += "\n";
        std::string line = "#";
        std::string help(spec.help);
        // The help text, wrapped at 78 columns, without markdown's backquotes.
        size_t start = 0;
        while (start < help.size()) {
            size_t end = help.find(' ', start);
            if (end == std::string::npos)
                end = help.size();
            std::string word = help.substr(start, end - start);
            std::erase(word, '`');
            if (line.size() + 1 + word.size() > 78) {
                out += line + "\n";
                line.resize(1); // "#"
            }
            line += ' ';
            line += word;
            start = end + 1;
        }
        std::string key(spec.yamlKey), value(spec.defaultText);
        if (value.empty())
            value = "\"\"";
        if (!exampleShowsDefault(spec))
            out += line + "\n# Default: " + value + "; for example:\n#" + key + ": " +
                   exampleValue(spec.type) + "\n";
        else
            out += line + "\n#" + key + ": " + value + "\n";
    }
    return out;
}

} // namespace man
