#pragma once
/// \file
/// Unsigned numbers as users write them, decimal or hex after "0x", read by one parser everywhere:
/// the option values of the table (value_parsers.h: sizes, gpu_ids, render minors, criu releases)
/// and the numeric arguments of the project's programs (criu-amdgpu, mockgpu-workload).

#include "base/result.h"

#include <cstdint>
#include <string_view>

namespace config {

/// Reads the number at the start of `text`: decimal digits, or hex digits after "0x" or "0X".
/// Returns false when there is no digit or the number does not fit in 64 bits; otherwise sets
/// `*out` and sets `*rest` to what follows the digits.
bool parseUnsigned(std::string_view text, uint64_t* out, std::string_view* rest);

/// The whole of `text` as a number from `min` to `max` (decimal or 0x hex, nothing around it).
/// The error (ErrorCode::Config) quotes the text and says which numbers are accepted; the caller
/// prefixes the option or file it came from.
base::Result<uint64_t> parseNumber(std::string_view text, uint64_t min, uint64_t max);

} // namespace config
