#pragma once
/// \file
/// "Did you mean ...?": the nearest valid name to a misspelt one, by edit distance.

#include <string>
#include <string_view>
#include <vector>

namespace config {

/// Levenshtein distance between two strings, comparing case-insensitively and treating '-' and
/// '_' as the same character (so "numa-check" is distance 0 from "NUMA_CHECK").
size_t editDistance(std::string_view a, std::string_view b);

/// editDistance(a, b) when it is at most `bound`, else bound + 1; it measures only the cells
/// within `bound` of the diagonal and stops at the first row with none within `bound`, so a name
/// far from every candidate costs little whatever its length.
size_t editDistanceWithin(std::string_view a, std::string_view b, size_t bound);

/// The candidate nearest to `name` when it is close enough to be a likely typo (distance at most
/// max(2, length/3)); the empty string otherwise.
std::string nearestName(std::string_view name, const std::vector<std::string>& candidates);

/// "unknown KIND 'name'; did you mean 'x'?" or, with no close candidate,
/// "unknown KIND 'name' (run 'criu-amdgpu config help' for the list)".
std::string unknownNameMessage(std::string_view kind, std::string_view name,
                               const std::vector<std::string>& candidates);

} // namespace config
