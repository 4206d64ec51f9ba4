#include "cmdline/value_options.h"

#include "config/numbers.h"
#include "config/value_parsers.h"

namespace cmdline {
namespace {

// A string option whose callback parses the text with `parse` and gives the value to `store`.
template <typename Parse>
Option addParsedOption(Command command, const std::string& name, Parse parse,
                       std::function<void(uint64_t)> store, const std::string& defaultText,
                       const std::string& valueName, const std::string& help) {
    auto fromText = [name, parse, store](const std::string& text) {
        base::Result<uint64_t> value = parse(text);
        if (!value.ok())
            Command::badValue(name, value.error().message());
        store(*value);
    };
    return command.addOption(name, fromText, help).typeName(valueName).defaultText(defaultText);
}

} // namespace

Option addNumberOption(Command command, const std::string& name, uint64_t min, uint64_t max,
                       std::function<void(uint64_t)> store, const std::string& defaultText,
                       const std::string& valueName, const std::string& help) {
    auto parse = [min, max](const std::string& text) {
        return config::parseNumber(text, min, max);
    };
    return addParsedOption(command, name, parse, std::move(store), defaultText, valueName, help);
}

Option addSizeOption(Command command, const std::string& name, uint64_t* value,
                     const std::string& valueName, const std::string& help) {
    auto parse = [](const std::string& text) { return config::parseSize(text); };
    auto store = [value](uint64_t v) { *value = v; };
    return addParsedOption(command, name, parse, store, config::formatSize(*value), valueName,
                           help);
}

} // namespace cmdline
