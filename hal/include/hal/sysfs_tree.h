#pragma once
/// \file
/// The directories the sysfs readers read: the real file system (system calls, what every
/// plugin run reads) or a tree held in memory (what the fuzz targets and tests feed the same
/// parsing code, without writing a tree to disk per input).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hal::sysfs {

/// An open directory. Names are paths relative to it ("3/properties"); errors are errno values
/// as the system calls give them (ENOENT, ENOTDIR, EISDIR, ...). A Dir is only read, so threads
/// may share one.
class Dir {
public:
    virtual ~Dir() = default;
    /// Opens the directory `name`; nullptr with errno in `err` when that fails.
    virtual std::unique_ptr<Dir> openDir(const char* name, int* err) const = 0;
    /// Reads the whole file `name` into `out` (cleared on failure); 0 or errno.
    virtual int readFile(const char* name, std::string* out) const = 0;
    /// The numeric entries ("0", "1", ...; see numberedName), ascending; errno in `err`.
    virtual std::vector<unsigned> numberedEntries(int* err) const = 0;
};

/// The number an entry name stands for: decimal, at most 9 digits, no leading zero; nullopt
/// for any other name.
std::optional<unsigned> numberedName(std::string_view name);

/// The process's file system: names are opened relative to the working directory (absolute
/// paths as they are).
const Dir& realFileSystem();

/// A tree of directories and files held in memory. Paths are split at '/', empty components
/// (a leading '/', "a//b") are skipped and "." stays in place; ".." is not supported (EINVAL).
class MemoryTree {
public:
    MemoryTree();
    ~MemoryTree();
    MemoryTree(const MemoryTree&) = delete;
    MemoryTree& operator=(const MemoryTree&) = delete;

    /// Creates the directory `path` and its parents; false (nothing changed) when a component
    /// is a file.
    bool addDir(std::string_view path);
    /// Creates or overwrites the file `path`, creating its parents; false (nothing changed)
    /// when `path` is a directory or a parent component is a file.
    bool addFile(std::string_view path, std::string_view content);
    /// The top of the tree ("/").
    const Dir& root() const;

    struct Entry;

private:
    std::unique_ptr<Entry> top_;
    std::unique_ptr<Dir> rootDir_;
};

} // namespace hal::sysfs
