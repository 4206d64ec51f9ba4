#pragma once
/// \file
/// Values of every option type and the option table's names, for the configuration harnesses'
/// seeds.

#include "config/option_table.h"

#include <string>
#include <vector>

namespace fuzzsupport {

/// Valid spellings of values of `type` (at least one).
std::vector<std::string> sampleValues(config::OptionType type);

/// The first sample value of each option of the table, with the option.
std::vector<std::pair<const config::OptionSpec*, std::string>> sampleAssignments();

} // namespace fuzzsupport
