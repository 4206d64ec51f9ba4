#include "config/value_parsers.h"

#include "base/log.h"
#include "config/numbers.h"
#include "formats/chunk_codec.h"
#include "formats/content_cipher.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <strings.h>

namespace config {

using settings::DeviceMapEntry;

namespace {

std::string str(std::string_view s) {
    return std::string(s);
}

// 'text', for messages. Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, falsely)
// about "'" + std::string.
std::string quoted(std::string_view s) {
    std::string q = "'";
    q.append(s);
    q += '\'';
    return q;
}

base::Error valueError(const std::string& message) {
    return base::makeError(base::ErrorCode::Config, "%s", message.c_str());
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

std::vector<std::string_view> splitCommas(std::string_view text) {
    std::vector<std::string_view> parts;
    size_t start = 0;
    while (true) {
        size_t comma = text.find(',', start);
        parts.push_back(
            trim(text.substr(start, comma == std::string_view::npos ? comma : comma - start)));
        if (comma == std::string_view::npos)
            return parts;
        start = comma + 1;
    }
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

constexpr const char* kBoolAccepted = "0, 1, yes, no, true, false, on, off (any case)";
constexpr const char* kSizeAccepted =
    "a byte count with an optional suffix K, M, G or T (powers of 1024), e.g. 512M or 2G";
constexpr const char* kLogLevelAccepted = "0-4 or msg, error, warn, info, debug";

} // namespace

const char* optionTypeName(OptionType type) {
    switch (type) {
    case OptionType::Bool:
        return "bool";
    case OptionType::Size:
        return "size";
    case OptionType::Path:
        return "path";
    case OptionType::BackendList:
        return "backend list";
    case OptionType::DeviceMap:
        return "device map";
    case OptionType::LogLevel:
        return "log level";
    case OptionType::CriuAbi:
        return "criu ABI";
    case OptionType::Compression:
        return "codec";
    case OptionType::Cipher:
        return "cipher";
    }
    return "?";
}

const char* optionTypeSyntax(OptionType type) {
    switch (type) {
    case OptionType::Bool:
        return "`0`, `1`, `yes`, `no`, `true`, `false`, `on`, `off`, in any case (the spellings "
               "criu's amdgpu plugin accepts for its `KFD_*` variables). In the options file and "
               "plugin options a bool option given without a value means true.";
    case OptionType::Size:
        return "A byte count, decimal or `0x` hex, with an optional suffix `K`, `M`, `G` or `T` "
               "(any case, optionally followed by `B` or `iB`; powers of 1024): `2G` is "
               "2147483648 bytes.";
    case OptionType::Path:
        return "A file or directory path. The empty string means the built-in default (for "
               "`config` and `options-file`: read no file).";
    case OptionType::BackendList:
        return "`auto`, one backend name, or a comma-separated order of preference such as "
               "`kfd,amdgpu-drm`. Names match `[a-z0-9-]+`; in YAML a sequence of names is "
               "accepted too.";
    case OptionType::DeviceMap:
        return "Comma-separated `SRC=DST` (or `SRC->DST`) pairs, e.g. "
               "`0x1234=0x5678,0x2222=renderD130`: SRC is a source gpu_id (decimal or `0x` "
               "hex), DST a destination gpu_id or `renderD<minor>`. No source and no destination "
               "may appear twice. In YAML also a sequence of such strings, a sequence of "
               "`{src: .., dst: ..}` mappings, or a mapping `SRC: DST`. The empty string is the "
               "empty map.";
    case OptionType::LogLevel:
        return "`0`-`4` or `msg`, `error`, `warn`, `info`, `debug` (criu's levels).";
    case OptionType::CriuAbi:
        return "Empty (detect the running criu), a criu release from `3.17` on (`4.0`, `4.2`, "
               "...), `dev` (the development branch), or a hook count `10`-`15`.";
    case OptionType::Compression:
        return "`none`, `lz4`, `zstd` (level 3) or `zstd:LEVEL` with LEVEL from `1` (fastest) to "
               "`19` (smallest).";
    case OptionType::Cipher:
        return "`none`, `aes-256-gcm` or `chacha20-poly1305`.";
    }
    return "";
}

base::Result<bool> parseBool(std::string_view text) {
    for (const char* t : {"1", "yes", "true", "on"})
        if (equalsIgnoreCase(text, t))
            return true;
    for (const char* f : {"0", "no", "false", "off"})
        if (equalsIgnoreCase(text, f))
            return false;
    return valueError(quoted(text) + " is not a boolean (accepted: " + kBoolAccepted + ")");
}

base::Result<uint64_t> parseSize(std::string_view text) {
    uint64_t number = 0;
    std::string_view suffix;
    if (!parseUnsigned(text, &number, &suffix)) {
        if (text.empty() || !isdigit(static_cast<unsigned char>(text[0])))
            return valueError(quoted(text) + " is not a size (accepted: " + kSizeAccepted + ")");
        return valueError("size '" + str(text) + "' is too large");
    }
    unsigned shift = 0;
    std::string_view unit = suffix;
    if (!unit.empty()) {
        switch (toupper(static_cast<unsigned char>(unit[0]))) {
        case 'K':
            shift = 10;
            break;
        case 'M':
            shift = 20;
            break;
        case 'G':
            shift = 30;
            break;
        case 'T':
            shift = 40;
            break;
        case 'B':
            shift = 0;
            break;
        default:
            shift = 64;
            break;
        }
        if (shift != 64) {
            std::string_view after = unit.substr(1);
            bool isByteSuffix = toupper(static_cast<unsigned char>(unit[0])) == 'B';
            if (!(after.empty() || (!isByteSuffix && (equalsIgnoreCase(after, "B") ||
                                                      equalsIgnoreCase(after, "iB")))))
                shift = 64;
        }
    }
    if (shift == 64)
        return valueError("bad size suffix '" + str(suffix) + "' in '" + str(text) +
                          "' (accepted suffixes: none for bytes, K, M, G, T; e.g. 512M or 2G)");
    if (shift && number > (std::numeric_limits<uint64_t>::max() >> shift))
        return valueError("size '" + str(text) + "' is too large");
    return number << shift;
}

base::Result<void> checkBackendName(std::string_view name) {
    auto known = [] {
        std::string list;
        for (const char* k : kKnownBackends)
            list += std::string(list.empty() ? "" : ", ") + k;
        return list;
    };
    if (name.empty())
        return valueError("empty backend name (accepted: auto, or backend names such as " +
                          known() + ", comma-separated)");
    bool valid = std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    });
    if (!valid)
        return valueError("backend name '" + str(name) +
                          "' must match [a-z0-9-]+ (known backends: " + known() + ")");
    if (name == "auto")
        return valueError("'auto' cannot be combined with backend names");
    return base::success();
}

base::Result<void> BackendListBuilder::add(std::string_view name) {
    HAL_TRY(checkBackendName(name));
    if (!seen_.emplace(name).second)
        return valueError("backend '" + str(name) + "' is listed twice");
    names_.emplace_back(name);
    return base::success();
}

base::Result<std::vector<std::string>> parseBackendList(std::string_view text) {
    if (trim(text) == "auto")
        return std::vector<std::string>{};
    BackendListBuilder names;
    for (std::string_view part : splitCommas(text))
        HAL_TRY(names.add(part));
    return names.take();
}

base::Result<uint32_t> parseGpuId(std::string_view text) {
    uint64_t value = 0;
    std::string_view rest;
    if (!parseUnsigned(text, &value, &rest) || !rest.empty() ||
        value > std::numeric_limits<uint32_t>::max())
        return valueError(quoted(text) +
                          " is not a gpu_id (accepted: a 32-bit number, decimal or 0x hex)");
    if (value == 0)
        return valueError("gpu_id 0 names no GPU");
    return static_cast<uint32_t>(value);
}

base::Result<DeviceMapEntry> parseDeviceMapEntry(std::string_view src, std::string_view dst) {
    DeviceMapEntry entry;
    HAL_TRY_ASSIGN(entry.srcGpuId, parseGpuId(trim(src)));
    dst = trim(dst);
    if (dst.size() > 7 && dst.substr(0, 7) == "renderD") {
        uint64_t minor = 0;
        std::string_view rest;
        std::string_view digits = dst.substr(7);
        if (!digits.empty() && isdigit(static_cast<unsigned char>(digits[0])) &&
            parseUnsigned(digits, &minor, &rest) && rest.empty() && minor <= 1u << 20) {
            entry.dstRenderMinor = static_cast<int>(minor);
            return entry;
        }
        return valueError(quoted(dst) + " is not a render node (accepted: renderD<minor>, e.g. "
                                        "renderD128)");
    }
    auto dstId = parseGpuId(dst);
    if (!dstId.ok())
        return valueError("destination '" + str(dst) +
                          "' is neither a gpu_id (decimal or 0x hex) nor renderD<minor>");
    entry.dstGpuId = *dstId;
    return entry;
}

base::Result<void> DeviceMapBuilder::add(const DeviceMapEntry& entry) {
    if (sources_.count(entry.srcGpuId))
        return valueError(base::strFormat("source GPU 0x%x is mapped twice", entry.srcGpuId));
    if (entry.dstRenderMinor < 0) {
        auto [it, added] = sourceOfDstGpu_.emplace(entry.dstGpuId, entry.srcGpuId);
        if (!added)
            return valueError(base::strFormat("destination GPU 0x%x is the target of two source "
                                              "GPUs (0x%x and 0x%x)",
                                              entry.dstGpuId, it->second, entry.srcGpuId));
    } else {
        auto [it, added] = sourceOfDstMinor_.emplace(entry.dstRenderMinor, entry.srcGpuId);
        if (!added)
            return valueError(base::strFormat("destination renderD%d is the target of two source "
                                              "GPUs (0x%x and 0x%x)",
                                              entry.dstRenderMinor, it->second, entry.srcGpuId));
    }
    sources_.insert(entry.srcGpuId);
    map_.push_back(entry);
    return base::success();
}

base::Result<std::vector<DeviceMapEntry>> parseDeviceMap(std::string_view text) {
    DeviceMapBuilder map;
    if (trim(text).empty())
        return map.take();
    for (std::string_view part : splitCommas(text)) {
        size_t arrow = part.find("->");
        size_t sep = arrow != std::string_view::npos ? arrow : part.find('=');
        size_t sepLen = arrow != std::string_view::npos ? 2 : 1;
        if (sep == std::string_view::npos)
            return valueError("device map entry '" + str(part) +
                              "' is not SRC=DST (e.g. 0x1234=0x5678 or 0x1234=renderD130)");
        HAL_TRY_ASSIGN(auto entry,
                       parseDeviceMapEntry(part.substr(0, sep), part.substr(sep + sepLen)));
        HAL_TRY(map.add(entry));
    }
    return map.take();
}

base::Result<int> parseLogLevelValue(std::string_view text) {
    base::LogLevel level;
    if (!base::parseLogLevel(std::string(text), &level))
        return valueError(quoted(text) + " is not a log level (accepted: " + kLogLevelAccepted +
                          ")");
    return static_cast<int>(level);
}

base::Result<std::string> parseCriuAbi(std::string_view text) {
    std::string value(text);
    if (text.empty() || text == "dev")
        return value;
    uint64_t first = 0, second = 0, third = 0;
    std::string_view rest;
    bool number =
        parseUnsigned(text, &first, &rest) && isdigit(static_cast<unsigned char>(text[0]));
    if (number && rest.empty() && text.find_first_of("xX") == std::string_view::npos &&
        first >= 10 && first <= 15)
        return value;
    bool release = number && text.find_first_of("xX") == std::string_view::npos &&
                   rest.size() > 1 && rest[0] == '.' &&
                   isdigit(static_cast<unsigned char>(rest[1])) &&
                   parseUnsigned(rest.substr(1), &second, &rest);
    if (release && !rest.empty())
        release = rest.size() > 1 && rest[0] == '.' &&
                  isdigit(static_cast<unsigned char>(rest[1])) &&
                  parseUnsigned(rest.substr(1), &third, &rest) && rest.empty();
    if (release && (first > 3 || (first == 3 && second >= 17)))
        return value;
    return valueError("'" + value +
                      "' is not a criu ABI (accepted: empty to detect it, a criu "
                      "release from 3.17 on such as 4.0 or 4.2, dev, or a hook count 10-15)");
}

base::Result<std::string> parseCompression(std::string_view text) {
    auto codec = formats::parseCodec(text);
    if (!codec.ok())
        return valueError(quoted(text) + " is not a codec (accepted: " + formats::kCodecForms +
                          ")");
    return codec->describe();
}

base::Result<std::string> parseCipherName(std::string_view text) {
    auto cipher = formats::parseCipher(text);
    if (!cipher.ok())
        return valueError(quoted(text) + " is not a cipher (accepted: " + formats::kCipherForms +
                          ")");
    return std::string(formats::cipherName(*cipher));
}

base::Result<TypedValue> parseValue(OptionType type, std::string_view text) {
    switch (type) {
    case OptionType::Bool: {
        HAL_TRY_ASSIGN(bool v, parseBool(text));
        return TypedValue(v);
    }
    case OptionType::Size: {
        HAL_TRY_ASSIGN(uint64_t v, parseSize(text));
        return TypedValue(v);
    }
    case OptionType::Path:
        return TypedValue(std::string(text));
    case OptionType::BackendList: {
        HAL_TRY_ASSIGN(auto v, parseBackendList(text));
        return TypedValue(std::move(v));
    }
    case OptionType::DeviceMap: {
        HAL_TRY_ASSIGN(auto v, parseDeviceMap(text));
        return TypedValue(std::move(v));
    }
    case OptionType::LogLevel: {
        HAL_TRY_ASSIGN(int v, parseLogLevelValue(text));
        return TypedValue(v);
    }
    case OptionType::CriuAbi: {
        HAL_TRY_ASSIGN(std::string v, parseCriuAbi(text));
        return TypedValue(std::move(v));
    }
    case OptionType::Compression: {
        HAL_TRY_ASSIGN(std::string v, parseCompression(text));
        return TypedValue(std::move(v));
    }
    case OptionType::Cipher: {
        HAL_TRY_ASSIGN(std::string v, parseCipherName(text));
        return TypedValue(std::move(v));
    }
    }
    return base::makeError(base::ErrorCode::Internal, "unknown option type");
}

std::string formatSize(uint64_t bytes) {
    static const char kSuffixes[] = {'T', 'G', 'M', 'K'};
    for (int i = 0; i < 4; ++i) {
        unsigned shift = 40 - 10 * i;
        uint64_t unit = uint64_t(1) << shift;
        if (bytes && bytes % unit == 0)
            return std::to_string(bytes >> shift) + kSuffixes[i];
    }
    return std::to_string(bytes);
}

std::string formatDeviceMap(const std::vector<DeviceMapEntry>& map) {
    std::string text;
    for (const DeviceMapEntry& e : map) {
        if (!text.empty())
            text += ',';
        text += base::strFormat("0x%x=", e.srcGpuId);
        text += e.dstRenderMinor >= 0 ? base::strFormat("renderD%d", e.dstRenderMinor)
                                      : base::strFormat("0x%x", e.dstGpuId);
    }
    return text;
}

std::string formatValue(const TypedValue& value) {
    if (const bool* b = std::get_if<bool>(&value))
        return *b ? "true" : "false";
    if (const uint64_t* size = std::get_if<uint64_t>(&value))
        return formatSize(*size);
    if (const std::string* text = std::get_if<std::string>(&value))
        return *text;
    if (const auto* names = std::get_if<std::vector<std::string>>(&value)) {
        std::string text;
        for (const std::string& n : *names)
            text += (text.empty() ? "" : ",") + n;
        return names->empty() ? "auto" : text;
    }
    if (const auto* map = std::get_if<std::vector<DeviceMapEntry>>(&value))
        return formatDeviceMap(*map);
    static const char* const kNames[] = {"msg", "error", "warn", "info", "debug"};
    int level = std::get<int>(value);
    return level >= 0 && level <= 4 ? kNames[level] : "unset";
}

} // namespace config
