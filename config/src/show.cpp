#include "config/config.h"

#include <algorithm>
#include <cstdio>

namespace config {
namespace {

std::string jsonString(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\r':
            out += "\\r";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
                out += buf;
            } else {
                out += c;
            }
        }
    }
    return out + "\"";
}

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
    std::string out = "{\"options\":[";
    for (size_t i = 0; i < config.options.size(); ++i) {
        const EffectiveOption& o = config.options[i];
        out += i ? ",\n  {\"name\":" : "\n  {\"name\":";
        out += jsonString(o.name) + ",\"value\":" + jsonString(o.value) +
               ",\"origin\":" + jsonString(o.origin) + "}";
    }
    return out + "\n]}\n";
}

} // namespace config
