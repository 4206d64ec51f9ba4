#include "config/config.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace config {
namespace {

std::string padded(const std::string& text, size_t width) {
    return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
}

} // namespace

std::string formatShowTable(const LoadedConfig& config) {
    size_t nameWidth = 6, valueWidth = 5;
    auto shown = [](const std::string& value) {
        return value.empty() ? std::string("\"\"") : value;
    };
    for (const EffectiveOption& o : config.options) {
        nameWidth = std::max(nameWidth, o.name.size());
        valueWidth = std::max(valueWidth, shown(o.value).size());
    }
    std::string out =
        padded("OPTION", nameWidth) + "  " + padded("VALUE", valueWidth) + "  ORIGIN\n";
    for (const EffectiveOption& o : config.options)
        out += padded(o.name, nameWidth) + "  " + padded(shown(o.value), valueWidth) + "  " +
               o.origin + "\n";
    return out;
}

std::string formatShowJson(const LoadedConfig& config) {
    nlohmann::ordered_json options = nlohmann::ordered_json::array();
    for (const EffectiveOption& o : config.options)
        options.push_back({{"name", o.name}, {"value", o.value}, {"origin", o.origin}});
    nlohmann::ordered_json show = {{"options", std::move(options)}};
    // A value or a path that is not UTF-8 is shown with U+FFFD rather than as invalid JSON.
    return show.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

} // namespace config
