#pragma once
/// \file
/// What the fuzz harnesses share: the "files" input format (several named files in one fuzz
/// input), an in-memory image store, and writing a file tree under a scratch directory.
///
/// The files format is text-friendly so that mutations keep its structure: a line "==> NAME"
/// starts a file, whose bytes run up to the next "\n==> " or the end of the input. Bytes before
/// the first header are the preamble (harness parameters).

#include "formats/image_store.h"
#include "topology/sysfs_tree.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fuzzsupport {

/// A fuzz input in the files format.
struct Files {
    std::string preamble;
    std::vector<std::pair<std::string, std::string>> files; ///< in input order
};

/// Splits an input in the files format.
Files splitFiles(std::string_view input);
/// The files format of `files` (splitFiles(joinFiles(f)) gives back f when no content holds
/// "\n==> " and no name holds a newline).
std::string joinFiles(const Files& files);

/// The lines of `input` (split at '\n'; the last line may be empty).
std::vector<std::string_view> splitLines(std::string_view input);

/// Images held in memory, by name; what a writer closes is visible to readers.
class MemoryStore : public formats::ImageStore {
public:
    base::Result<std::unique_ptr<formats::ImageWriter>> openWrite(const std::string& name) override;
    base::Result<std::unique_ptr<formats::ImageReader>> openRead(const std::string& name) override;
    bool exists(const std::string& name) override;
    std::string describe() const override { return "memory store"; }

    /// Sets the bytes of image `name`.
    void put(const std::string& name, std::string_view bytes);
    /// Every image, by name.
    const std::map<std::string, std::string>& images() const { return images_; }

private:
    std::map<std::string, std::string> images_;
};

/// A relative path made only of components [A-Za-z0-9_.:-] (no "." or ".."), each at most
/// kMaxComponent characters (a file system's NAME_MAX is a limit of the harness's tree, not a
/// finding), at most `maxDepth` deep; false for anything else (the harness drops such files).
constexpr size_t kMaxComponent = 100;
bool safeRelativePath(std::string_view path, unsigned maxDepth);

/// Writes `files` under `root` (created when missing; files already there stay), dropping
/// names that are not safeRelativePath(name, maxDepth) and a file whose path is already a
/// directory (or the reverse). A name ending in '/' makes a directory.
void writeTree(const std::string& root, const Files& files, unsigned maxDepth);

/// What writeTree(root, files, maxDepth) writes, added to `tree` instead (the same names kept,
/// the same dropped).
void addTree(topology::sysfs::MemoryTree* tree, const std::string& root, const Files& files,
             unsigned maxDepth);

/// Reads every regular file under `root` into the files format, names relative to root, sorted.
Files readTree(const std::string& root);

/// A scratch directory for one fuzz process, on tmpfs when /dev/shm exists, removed at exit.
const std::string& scratchDir();

} // namespace fuzzsupport
