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

size_t editDistanceWithin(std::string_view a, std::string_view b, size_t bound) {
    const size_t over = bound + 1;
    if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > bound)
        return over;
    // One row of the table, cells past the band held at `over`; row i covers the columns j
    // with |i - j| <= bound (a cell outside it is more than `bound` anyway).
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = std::min(j, over);
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t lo = i > bound ? i - bound : 1;
        size_t hi = std::min(b.size(), i + bound);
        size_t diagonal = row[lo - 1];
        row[lo - 1] = lo == 1 ? std::min(i, over) : over;
        size_t least = row[lo - 1];
        for (size_t j = lo; j <= hi; ++j) {
            size_t above = row[j];
            size_t cost = normalized(a[i - 1]) == normalized(b[j - 1]) ? 0 : 1;
            row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + cost, over});
            diagonal = above;
            least = std::min(least, row[j]);
        }
        if (least > bound)
            return over; // every later row is at least as far
    }
    return std::min(row[b.size()], over);
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
        // Only a distance within the limit and below the best so far can change the answer.
        size_t d = editDistanceWithin(name, c, std::min(limit, bestDistance - 1));
        if (d <= limit && d < bestDistance) {
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
