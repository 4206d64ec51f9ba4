#pragma once
/// \file
/// The prose of the options documentation that belongs to no single option: where options come
/// from and in which order backends are tried. docs/options.md (markdown) and the man page
/// criu-amdgpu-options(5) (roff) both render these blocks, so the two never say different things.

#include "config/option_table.h"

#include <string>
#include <string_view>
#include <vector>

namespace config {

/// One block of documentation prose. Its text marks literal spans with backquotes (`like this`),
/// as markdown does; each renderer turns them into its own markup.
struct DocBlock {
    /// How the block is laid out.
    enum class Kind {
        Paragraph,   ///< a paragraph of its own
        NumberedItem ///< the next item of a numbered list (consecutive items form one list)
    };
    Kind kind;        ///< layout
    std::string text; ///< one paragraph of text, no line breaks
};

/// A titled section of prose.
struct DocSection {
    std::string title;            ///< e.g. "Where options come from"
    std::vector<DocBlock> blocks; ///< in reading order
};

/// "Where options come from": the sources in precedence order and how they combine.
DocSection optionSourcesSection();
/// "Backend preference": the order in which the backend registry tries the backends.
DocSection backendPreferenceSection();

/// Every value type, in documentation order.
inline constexpr OptionType kOptionTypes[] = {
    OptionType::Bool,        OptionType::Size,        OptionType::Path,
    OptionType::BackendList, OptionType::DeviceMap,   OptionType::LogLevel,
    OptionType::CriuAbi,     OptionType::Compression, OptionType::Cipher};

/// How one source spells an option, e.g. {"YAML", "`numa_check: false`"}.
struct OptionSpelling {
    std::string source; ///< "YAML", "Options file", "Environment", "Plugin option", or empty
    std::string text;   ///< with `literal` spans
};

/// The option in each source that may set it, with an example value (the non-default of a bool,
/// else the type in capitals); then, when some sources may not set it, an entry with an empty
/// source and the text "Cannot be set in the YAML file or the options file." (for example).
std::vector<OptionSpelling> optionSpellings(const OptionSpec& spec);

/// "`text`": a literal span, as the prose of the DocBlocks marks one.
std::string literalSpan(std::string_view text);

/// "`CRIU_AMDGPU_NUMA_CHECK`, `KFD_NUMA_CHECK`": the option's environment variables.
std::string optionEnvironmentNames(const OptionSpec& spec);

} // namespace config
