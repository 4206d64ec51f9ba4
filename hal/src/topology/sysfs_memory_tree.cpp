// A file tree held in memory behind sysfs::Dir, with the errors the system calls give for the
// same tree: ENOENT for a missing name, ENOTDIR for a file used as a directory, EISDIR for a
// directory read as a file.
#include "hal/sysfs_tree.h"

#include <algorithm>
#include <cerrno>

namespace hal::sysfs {

struct MemoryTree::Entry {
    bool directory = true;
    std::string content;
    std::map<std::string, Entry, std::less<>> children;
};

namespace {

using Entry = MemoryTree::Entry;

// Calls `step(component)` for each component of `path` but empty ones and "."; stops and returns
// false when `step` does.
template <typename Step> bool forEachComponent(std::string_view path, Step step) {
    while (!path.empty()) {
        size_t slash = path.find('/');
        std::string_view part = path.substr(0, slash);
        path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
        if (part.empty() || part == ".")
            continue;
        if (!step(part))
            return false;
    }
    return true;
}

// The entry `path` names below `from`, or nullptr with errno in `err`.
const Entry* find(const Entry* from, std::string_view path, int* err) {
    *err = 0;
    forEachComponent(path, [&](std::string_view part) {
        if (part == "..")
            *err = EINVAL;
        else if (!from->directory)
            *err = ENOTDIR;
        else if (auto it = from->children.find(part); it == from->children.end())
            *err = ENOENT;
        else
            from = &it->second;
        return *err == 0;
    });
    return *err ? nullptr : from;
}

class MemoryDir : public Dir {
public:
    explicit MemoryDir(const Entry* entry) : entry_(entry) {}

    std::unique_ptr<Dir> openDir(const char* name, int* err) const override {
        const Entry* e = find(entry_, name, err);
        if (e && !e->directory)
            *err = ENOTDIR;
        return *err ? nullptr : std::make_unique<MemoryDir>(e);
    }

    int readFile(const char* name, std::string* out) const override {
        int err = 0;
        const Entry* e = find(entry_, name, &err);
        if (e && e->directory)
            err = EISDIR;
        if (err)
            out->clear();
        else
            out->assign(e->content);
        return err;
    }

    std::vector<unsigned> numberedEntries(int* err) const override {
        *err = 0;
        std::vector<unsigned> out;
        for (const auto& [name, child] : entry_->children)
            if (std::optional<unsigned> n = numberedName(name))
                out.push_back(*n);
        std::sort(out.begin(), out.end());
        return out;
    }

private:
    const Entry* entry_;
};

// The directory `path` below `at`, created where missing; nullptr when a component is a file
// (then nothing was created: every component above a file exists already).
Entry* makeDirs(Entry* at, std::string_view path) {
    if (!forEachComponent(path, [](std::string_view part) { return part != ".."; }))
        return nullptr;
    bool ok = forEachComponent(path, [&](std::string_view part) {
        if (!at->directory)
            return false;
        at = &at->children[std::string(part)];
        return true;
    });
    return ok && at->directory ? at : nullptr;
}

} // namespace

MemoryTree::MemoryTree()
    : top_(std::make_unique<Entry>()), rootDir_(std::make_unique<MemoryDir>(top_.get())) {}

MemoryTree::~MemoryTree() = default;

bool MemoryTree::addDir(std::string_view path) {
    return makeDirs(top_.get(), path) != nullptr;
}

bool MemoryTree::addFile(std::string_view path, std::string_view content) {
    size_t slash = path.find_last_of('/');
    std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    std::string_view parent =
        slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
    if (name.empty() || name == "." || name == "..")
        return false;
    Entry* dir = makeDirs(top_.get(), parent);
    if (!dir)
        return false;
    auto it = dir->children.find(name);
    if (it != dir->children.end() && it->second.directory)
        return false;
    Entry& file = it != dir->children.end() ? it->second : dir->children[std::string(name)];
    file.directory = false;
    file.content = content;
    return true;
}

const Dir& MemoryTree::root() const {
    return *rootDir_;
}

} // namespace hal::sysfs
