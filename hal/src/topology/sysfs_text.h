#pragma once
// Helpers shared by the sysfs reader and writer: whole-file I/O with errno, "key value" parsing,
// and the order in which the kernel prints node property keys.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hal::sysfs {

/// Reads a whole file; returns 0 or the errno of the failing call.
int readFile(const std::string& path, std::string* out);
/// Reads the whole file `name` of the directory open as `dirFd`; returns 0 or the errno of the
/// failing call.
int readFileAt(int dirFd, const char* name, std::string* out);

/// An open directory: the reader opens every file relative to one, so
/// the kernel walks one path component per open instead of the whole path.
class Dir {
public:
    /// Opens `name` relative to `parent` (AT_FDCWD for a path); errno via `err` when it fails.
    Dir(int parent, const char* name, int* err);
    ~Dir();
    Dir(const Dir&) = delete;
    Dir& operator=(const Dir&) = delete;
    /// The descriptor, or -1 when opening failed.
    int fd() const { return fd_; }
    bool ok() const { return fd_ >= 0; }
    /// Numeric entries ("0", "1", ...) sorted numerically; errno via `err`.
    std::vector<unsigned> numberedEntries(int* err) const;

private:
    int fd_ = -1;
};

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

} // namespace hal::sysfs
