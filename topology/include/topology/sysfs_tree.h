#pragma once
/// \file
/// The directories the sysfs readers read (KFD's topology tree, the render nodes' sysfs and
/// /dev/dri): the real file system (system calls, what every plugin run reads) or a tree held in
/// memory (what the fuzz targets and tests feed the same parsing code, without writing a tree to
/// disk per input).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace topology::sysfs {

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
    /// The target of the symbolic link `name`, as readlink() gives it, in `out` (cleared on
    /// failure); 0 or errno (EINVAL: `name` is not a link).
    virtual int readLink(const char* name, std::string* out) const = 0;
    /// The last component of the path `name` resolves to, every link followed (the file name of
    /// its realpath(); "/" for the top), in `out` (cleared on failure); 0 or errno.
    virtual int resolvedName(const char* name, std::string* out) const = 0;
    /// The names of the entries, "." and ".." left out, in no particular order; errno in `err`.
    virtual std::vector<std::string> entryNames(int* err) const = 0;

    /// The numeric entries ("0", "1", ...; see numberedName), ascending; errno in `err`.
    std::vector<unsigned> numberedEntries(int* err) const;
};

/// The number an entry name stands for: decimal, at most 9 digits, no leading zero; nullopt
/// for any other name.
std::optional<unsigned> numberedName(std::string_view name);

/// The process's file system: names are opened relative to the working directory (absolute
/// paths as they are).
const Dir& realFileSystem();

/// A tree of directories, files and symbolic links held in memory, read as the kernel walks
/// paths: components are split at '/', empty ones (a leading '/', "a//b") are skipped, "." stays
/// in place, ".." goes up (not above the top), a link met on the way is followed (an absolute
/// target from the top, a relative one from the link's directory; more than 40 links: ELOOP).
/// Building the tree takes no "..".
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
    /// Creates the symbolic link `path` to `target` (either may be dangling or relative), creating
    /// its parents; false (nothing changed) when `path` exists or a parent component is a file.
    bool addLink(std::string_view path, std::string_view target);
    /// The top of the tree ("/").
    const Dir& root() const;

    struct Entry;

private:
    std::unique_ptr<Entry> top_;
    std::unique_ptr<Dir> rootDir_;
};

} // namespace topology::sysfs
