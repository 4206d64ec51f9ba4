#pragma once
/// \file
/// Options whose values are numbers or byte sizes, read by the option table's own parsers
/// (config::parseNumber, config::parseSize), so a number means the same on every command line
/// and in every configuration source. A bad value fails the run with an error that names the
/// option: "--gpus: 'many' is not a number (accepted: ...)".

#include "cmdline/command.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>

namespace cmdline {

/// Adds `name` VALUE_NAME, a number from `min` to `max` (decimal or 0x hex) given to `store`.
/// The help shows `defaultText` as the default.
Option addNumberOption(Command command, const std::string& name, uint64_t min, uint64_t max,
                       std::function<void(uint64_t)> store, const std::string& defaultText,
                       const std::string& valueName, const std::string& help);

/// addNumberOption storing into `*value`, whose current value is the default; `max` is capped to
/// what T holds.
template <typename T>
Option addNumberOption(Command command, const std::string& name, T* value, uint64_t min,
                       uint64_t max, const std::string& valueName, const std::string& help) {
    static_assert(std::is_unsigned_v<T>);
    return addNumberOption(
        command, name, min, std::min<uint64_t>(max, std::numeric_limits<T>::max()),
        [value](uint64_t v) { *value = static_cast<T>(v); }, std::to_string(*value), valueName,
        help);
}

/// Adds `name` VALUE_NAME, a byte count with an optional K, M, G or T suffix (config::parseSize),
/// stored in `*value`. The help shows `*value` as the default.
Option addSizeOption(Command command, const std::string& name, uint64_t* value,
                     const std::string& valueName, const std::string& help);

} // namespace cmdline
