// A file tree held in memory behind sysfs::Dir, with the errors the system calls give for the
// same tree: ENOENT for a missing name, ENOTDIR for a file used as a directory, EISDIR for a
// directory read as a file, EINVAL for readlink of what is not a link, ELOOP for a chain of
// links too long to follow.
#include "topology/sysfs_tree.h"

#include <cerrno>
#include <utility>

namespace topology::sysfs {

struct MemoryTree::Entry {
    enum class Kind { Directory, File, Link } kind = Kind::Directory;
    std::string content; ///< a file's bytes, a link's target
    std::map<std::string, Entry, std::less<>> children;

    bool directory() const { return kind == Kind::Directory; }
};

namespace {

using Entry = MemoryTree::Entry;

// Links followed in one walk at the most, as Linux's MAXSYMLINKS.
constexpr int kMaxLinks = 40;

// Where a walk stands: the directories from the top down to the entry reached, each with its
// name (the top's is "/"), so that ".." and relative link targets know where they are.
using Trail = std::vector<std::pair<Entry*, std::string_view>>;

struct Walk {
    bool followLast = true; ///< a link as the last component is followed (open, not readlink)
    bool create = false;    ///< missing directories are made (building the tree)
    int links = 0;          ///< links followed so far
};

// Walks `path` from the end of `trail`, leaving the entry reached at its end; 0 or errno.
int walk(Trail* trail, std::string_view path, Walk* how) {
    if (!path.empty() && path.front() == '/')
        trail->resize(1);
    while (!path.empty()) {
        size_t slash = path.find('/');
        std::string_view part = path.substr(0, slash);
        path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
        if (part.empty() || part == ".")
            continue;
        Entry* at = trail->back().first;
        if (!at->directory())
            return ENOTDIR;
        if (part == "..") {
            if (trail->size() > 1)
                trail->pop_back();
            continue;
        }
        auto it = at->children.find(part);
        if (it == at->children.end()) {
            if (!how->create)
                return ENOENT;
            it = at->children.emplace(std::string(part), Entry{}).first;
        }
        Entry* next = &it->second;
        bool last = path.find_first_not_of("/") == std::string_view::npos;
        if (next->kind == Entry::Kind::Link && (!last || how->followLast)) {
            if (++how->links > kMaxLinks)
                return ELOOP;
            // The target is followed as it is: a walk that builds the tree makes no directory
            // through a link (a dangling one stays dangling, as on disk).
            Walk inner{true, false, how->links};
            int err = walk(trail, next->content, &inner);
            how->links = inner.links;
            if (err)
                return err;
            continue;
        }
        trail->emplace_back(next, it->first);
    }
    return 0;
}

class MemoryDir : public Dir {
public:
    explicit MemoryDir(Trail trail) : trail_(std::move(trail)) {}

    std::unique_ptr<Dir> openDir(const char* name, int* err) const override {
        Trail t = trail_;
        Walk how;
        *err = walk(&t, name, &how);
        if (*err == 0 && !t.back().first->directory())
            *err = ENOTDIR;
        return *err ? nullptr : std::make_unique<MemoryDir>(std::move(t));
    }

    int readFile(const char* name, std::string* out) const override {
        return contentOf(name, Entry::Kind::File, EISDIR, out);
    }

    int readLink(const char* name, std::string* out) const override {
        return contentOf(name, Entry::Kind::Link, EINVAL, out);
    }

    int resolvedName(const char* name, std::string* out) const override {
        Trail t = trail_;
        Walk how;
        int err = walk(&t, name, &how);
        if (err)
            out->clear();
        else
            out->assign(t.back().second);
        return err;
    }

    std::vector<std::string> entryNames(int* err) const override {
        *err = 0;
        std::vector<std::string> out;
        for (const auto& [name, child] : trail_.back().first->children)
            out.push_back(name);
        return out;
    }

private:
    // What `name` holds when it is of kind `want` (a file's bytes; a link's target, the link not
    // followed), else `wrongKind`; `out` is cleared on failure.
    int contentOf(const char* name, Entry::Kind want, int wrongKind, std::string* out) const {
        Trail t = trail_;
        Walk how;
        how.followLast = want != Entry::Kind::Link;
        int err = walk(&t, name, &how);
        if (err == 0 && t.back().first->kind != want)
            err = wrongKind;
        if (err)
            out->clear();
        else
            out->assign(t.back().first->content);
        return err;
    }

    Trail trail_;
};

bool hasDotDot(std::string_view path) {
    while (!path.empty()) {
        size_t slash = path.find('/');
        if (path.substr(0, slash) == "..")
            return true;
        path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    }
    return false;
}

// The directory `path` names, created where missing (links on the way followed); nullptr when a
// component is a file or a link leads nowhere (then nothing was created: a walk stops at the
// first component that is not a directory, and every component above it existed already).
Entry* makeDirs(Entry* top, std::string_view path) {
    if (hasDotDot(path))
        return nullptr;
    Trail t{{top, "/"}};
    Walk how;
    how.create = true;
    if (walk(&t, path, &how) != 0 || !t.back().first->directory())
        return nullptr;
    return t.back().first;
}

// Splits `path` into its parent directory and its last component.
std::pair<std::string_view, std::string_view> splitLast(std::string_view path) {
    size_t slash = path.find_last_of('/');
    if (slash == std::string_view::npos)
        return {std::string_view(), path};
    return {path.substr(0, slash), path.substr(slash + 1)};
}

bool badLastName(std::string_view name) {
    return name.empty() || name == "." || name == "..";
}

} // namespace

MemoryTree::MemoryTree()
    : top_(std::make_unique<Entry>()),
      rootDir_(std::make_unique<MemoryDir>(Trail{{top_.get(), "/"}})) {}

MemoryTree::~MemoryTree() = default;

bool MemoryTree::addDir(std::string_view path) {
    return makeDirs(top_.get(), path) != nullptr;
}

bool MemoryTree::addFile(std::string_view path, std::string_view content) {
    auto [parent, name] = splitLast(path);
    if (badLastName(name))
        return false;
    Entry* dir = makeDirs(top_.get(), parent);
    if (!dir)
        return false;
    auto it = dir->children.find(name);
    if (it != dir->children.end() && it->second.kind != Entry::Kind::File)
        return false;
    Entry& file = it != dir->children.end() ? it->second : dir->children[std::string(name)];
    file.kind = Entry::Kind::File;
    file.content = content;
    return true;
}

bool MemoryTree::addLink(std::string_view path, std::string_view target) {
    auto [parent, name] = splitLast(path);
    if (badLastName(name))
        return false;
    Entry* dir = makeDirs(top_.get(), parent);
    if (!dir || dir->children.count(name))
        return false;
    Entry& link = dir->children[std::string(name)];
    link.kind = Entry::Kind::Link;
    link.content = target;
    return true;
}

const Dir& MemoryTree::root() const {
    return *rootDir_;
}

} // namespace topology::sysfs
