// The value parsers (device map, backend list, size, ...): the first byte picks the type, the
// rest is the text. A value that parses must format to text that parses to the same value.
#include "config_samples.h"
#include "fuzz_target.h"

#include "config/value_parsers.h"

#include <cstdio>
#include <cstdlib>

namespace {
constexpr config::OptionType kTypes[] = {
    config::OptionType::DeviceMap, config::OptionType::BackendList, config::OptionType::Size,
    config::OptionType::Bool,      config::OptionType::LogLevel,    config::OptionType::CriuAbi,
    config::OptionType::Path,      config::OptionType::Compression, config::OptionType::Cipher};
} // namespace

void fuzzOne(std::string_view input) {
    if (input.empty())
        return;
    config::OptionType type = kTypes[static_cast<unsigned char>(input[0]) % std::size(kTypes)];
    input.remove_prefix(1);
    auto value = config::parseValue(type, input);
    if (!value.ok())
        return;
    std::string text = config::formatValue(*value);
    auto again = config::parseValue(type, text);
    if (!again.ok() || config::formatValue(*again) != text) {
        fprintf(stderr, "%s value '%.*s' formats as '%s', which does not parse back\n",
                config::optionTypeName(type), static_cast<int>(input.size()), input.data(),
                text.c_str());
        abort();
    }
}

std::vector<std::string> fuzzSeeds() {
    std::vector<std::string> seeds;
    for (size_t i = 0; i < std::size(kTypes); ++i)
        for (const std::string& v : fuzzsupport::sampleValues(kTypes[i]))
            seeds.push_back(std::string(1, static_cast<char>('@' + i)) + v); // '@' % 8 == 0
    return seeds;
}
