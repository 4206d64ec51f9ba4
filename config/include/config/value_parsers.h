#pragma once
/// \file
/// Parsers and formatters for the value types of the option table. Parsers take the text a user
/// wrote (in any source) and return the typed value or an base::Error (ErrorCode::Config) whose
/// message says what was wrong and which values are accepted; the caller prefixes the source.

#include "base/result.h"
#include "settings/settings.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace config {

using settings::DeviceMapEntry;

/// The value types of options: what text they accept.
enum class OptionType {
    Bool,
    Size,
    Path,
    BackendList,
    DeviceMap,
    LogLevel,
    CriuAbi,
    Compression,
    Cipher
};

/// A parsed value of any option type: bool (Bool), uint64_t (Size), std::string (Path, CriuAbi,
/// Compression),
/// backend names (BackendList), device map (DeviceMap), int (LogLevel).
using TypedValue = std::variant<bool, uint64_t, std::string, std::vector<std::string>,
                                std::vector<DeviceMapEntry>, int>;

/// Short name of a type for messages and documentation ("bool", "size", ...).
const char* optionTypeName(OptionType type);
/// One paragraph describing the accepted spellings of a type (for documentation).
const char* optionTypeSyntax(OptionType type);

/// Backends this project builds; other names that match [a-z0-9-]+ are accepted too (the backend
/// registry reports a backend that is not installed).
inline constexpr const char* kKnownBackends[] = {"kfd", "amdgpu-drm", "mock"};

/// 0/1/yes/no/true/false/on/off, case-insensitive (the spellings criu's amdgpu plugin accepts for
/// its KFD_* variables).
base::Result<bool> parseBool(std::string_view text);

/// A byte count: decimal (or 0x hex) digits and an optional binary suffix K, M, G or T
/// (case-insensitive, optionally followed by "B" or "iB"): "2G" is 2^31 bytes. Rejects overflow.
base::Result<uint64_t> parseSize(std::string_view text);

/// "auto" (returns an empty list) or one or more comma-separated backend names, each matching
/// [a-z0-9-]+, without repeats. Spaces around commas are allowed.
base::Result<std::vector<std::string>> parseBackendList(std::string_view text);

/// Checks one backend name of a list: [a-z0-9-]+ and not "auto".
base::Result<void> checkBackendName(std::string_view name);

/// Builds a backend list name by name, refusing a name given twice; each add takes O(log n), so
/// a list of any length is read in O(n log n).
class BackendListBuilder {
public:
    /// Checks `name` (checkBackendName) and appends it; fails when it is already listed.
    base::Result<void> add(std::string_view name);
    /// The names in the order added.
    std::vector<std::string> take() { return std::move(names_); }

private:
    std::vector<std::string> names_;
    std::set<std::string, std::less<>> seen_;
};

/// A gpu_id: decimal or 0x-prefixed hex, non-zero, fitting in 32 bits.
base::Result<uint32_t> parseGpuId(std::string_view text);

/// One device-map assignment from its two halves: src is a gpu_id, dst a gpu_id or
/// "renderD<minor>".
base::Result<DeviceMapEntry> parseDeviceMapEntry(std::string_view src, std::string_view dst);

/// Builds a device map entry by entry, refusing a source or a destination given twice; each add
/// takes O(log n), so a map of any length is read in O(n log n).
class DeviceMapBuilder {
public:
    /// Appends `entry`; fails when its source or its destination is already in the map.
    base::Result<void> add(const DeviceMapEntry& entry);
    /// The entries in the order added.
    std::vector<DeviceMapEntry> take() { return std::move(map_); }

private:
    std::vector<DeviceMapEntry> map_;
    std::set<uint32_t> sources_;
    std::map<uint32_t, uint32_t> sourceOfDstGpu_;
    std::map<int, uint32_t> sourceOfDstMinor_;
};

/// The text form of a device map: comma-separated SRC=DST (or SRC->DST) pairs, e.g.
/// "0x1234=0x5678,0x2222=renderD130". The empty string is the empty map.
base::Result<std::vector<DeviceMapEntry>> parseDeviceMap(std::string_view text);

/// A criu log level: 0..4 or msg, error, warn, info, debug (base::parseLogLevel).
base::Result<int> parseLogLevelValue(std::string_view text);

/// A criu plugin ABI to assume: empty (detect), "dev", a criu release "MAJOR.MINOR[.PATCH]" from
/// 3.17 on, or a hook count 10..15. Returns the text unchanged when valid.
base::Result<std::string> parseCriuAbi(std::string_view text);

/// A codec of BO contents (formats::parseCodec): none, lz4, zstd or zstd:LEVEL. Returns its
/// canonical text ("zstd" gives "zstd:3").
base::Result<std::string> parseCompression(std::string_view text);
/// A cipher of `content-encryption` (formats::parseCipher), as its canonical name.
base::Result<std::string> parseCipherName(std::string_view text);

/// Parses text as a value of `type`. A Path accepts any text (the empty string means the built-in
/// default).
base::Result<TypedValue> parseValue(OptionType type, std::string_view text);

/// The canonical text of a size: the largest exact binary suffix ("2G"), or plain bytes.
std::string formatSize(uint64_t bytes);
/// The canonical text of a device map ("0x1234=0x5678,0x2222=renderD130"; "" when empty).
std::string formatDeviceMap(const std::vector<DeviceMapEntry>& map);
/// The canonical text of a typed value; parseValue(type, formatValue(v)) gives back v, except
/// for an unset log level, which formats as "unset".
std::string formatValue(const TypedValue& value);

} // namespace config
