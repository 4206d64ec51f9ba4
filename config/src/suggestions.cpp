#include "config/suggestions.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace config {
namespace {

char normalized(char c) {
    return c == '_' ? '-' : static_cast<char>(tolower(static_cast<unsigned char>(c)));
}

} // namespace

size_t editDistance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            size_t cost = normalized(a[i - 1]) == normalized(b[j - 1]) ? 0 : 1;
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string nearestName(std::string_view name, const std::vector<std::string>& candidates) {
    std::string best;
    size_t limit = std::max<size_t>(2, name.size() / 3);
    size_t bestDistance = SIZE_MAX;
    for (const std::string& c : candidates) {
        // The distance is at least the difference in length: a candidate that cannot be near
        // enough, or nearer than the best so far, is not measured (a long name costs nothing).
        size_t gap = name.size() > c.size() ? name.size() - c.size() : c.size() - name.size();
        if (gap > limit || gap >= bestDistance)
            continue;
        size_t d = editDistance(name, c);
        if (d < bestDistance) {
            best = c;
            bestDistance = d;
        }
    }
    return bestDistance <= limit ? best : std::string();
}

std::string unknownNameMessage(std::string_view kind, std::string_view name,
                               const std::vector<std::string>& candidates) {
    std::string message =
        std::string("unknown ") + std::string(kind) + " '" + std::string(name) + "'";
    std::string nearest = nearestName(name, candidates);
    if (!nearest.empty())
        return message + "; did you mean '" + nearest + "'?";
    return message + " (run 'criu-amdgpu config help' for the list)";
}

} // namespace config
