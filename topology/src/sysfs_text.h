#pragma once
// Helpers shared by the sysfs reader and writer: whole-file I/O with errno, "key value" parsing,
// and the order in which the kernel prints node property keys.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace topology::sysfs {

/// Reads a whole file; returns 0 or the errno of the failing call.
int readFile(const std::string& path, std::string* out);
/// Reads the whole file `name` of the directory open as `dirFd`; returns 0 or the errno of the
/// failing call.
int readFileAt(int dirFd, const char* name, std::string* out);

/// Writes a whole file (created or truncated); returns 0 or the errno of the failing call.
int writeFile(const std::string& path, const std::string& text);

/// Parses "key value" lines: unsigned decimal values go to `numbers`, anything else to `texts`.
void parseKeyValues(std::string_view text, std::map<std::string, uint64_t>* numbers,
                    std::map<std::string, std::string>* texts);
/// The unsigned decimal number a one-value file holds ("4660\n"), or nullopt.
std::optional<uint64_t> parseNumber(std::string_view text);

/// Formats "key value" lines: keys of `order` first in that order, then the rest sorted, then
/// the text lines.
std::string formatKeyValues(const std::map<std::string, uint64_t>& numbers,
                            const std::map<std::string, std::string>& texts,
                            const std::vector<std::string>& order);

/// Key order of nodes/N/properties on current kernels (kfd_topology.c).
const std::vector<std::string>& nodeKeyOrder();
/// Key order of io_links/p2p_links properties.
const std::vector<std::string>& linkKeyOrder();
/// Key order of mem_banks properties.
const std::vector<std::string>& memBankKeyOrder();
/// Key order of caches properties.
const std::vector<std::string>& cacheKeyOrder();

} // namespace topology::sysfs
