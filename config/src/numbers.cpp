#include "config/numbers.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <string>

namespace config {

bool parseUnsigned(std::string_view text, uint64_t* out, std::string_view* rest) {
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        base = 16;
        text.remove_prefix(2);
    }
    uint64_t value = 0;
    size_t i = 0;
    for (; i < text.size(); ++i) {
        int c = static_cast<unsigned char>(text[i]);
        int digit;
        if (isdigit(c))
            digit = c - '0';
        else if (base == 16 && isxdigit(c))
            digit = tolower(c) - 'a' + 10;
        else
            break;
        if (value > (std::numeric_limits<uint64_t>::max() - digit) / base)
            return false;
        value = value * base + digit;
    }
    if (i == 0)
        return false;
    *out = value;
    *rest = text.substr(i);
    return true;
}

base::Result<uint64_t> parseNumber(std::string_view text, uint64_t min, uint64_t max) {
    bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    std::string_view digits = hex ? text.substr(2) : text;
    bool wellFormed = !digits.empty() && std::all_of(digits.begin(), digits.end(), [hex](char c) {
        return hex ? isxdigit(static_cast<unsigned char>(c))
                   : isdigit(static_cast<unsigned char>(c));
    });
    uint64_t value = 0;
    std::string_view rest;
    const char* problem = !wellFormed ? "is not a number"
                          : !parseUnsigned(text, &value, &rest) || value < min || value > max
                              ? "is out of range"
                              : nullptr;
    if (!problem)
        return value;
    return base::makeError(base::ErrorCode::Config,
                           "'%.*s' %s (accepted: a number from %llu to %llu, decimal or 0x hex)",
                           static_cast<int>(text.size()), text.data(), problem,
                           static_cast<unsigned long long>(min),
                           static_cast<unsigned long long>(max));
}

} // namespace config
