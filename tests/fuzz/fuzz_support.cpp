#include "fuzz_support.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace fuzzsupport {
namespace {

constexpr std::string_view kHeader = "==> ";

class MemoryReader : public formats::ImageReader {
public:
    MemoryReader(std::string name, std::string bytes)
        : name_(std::move(name)), bytes_(std::move(bytes)) {}
    base::Result<void> readExact(std::span<std::byte> out) override {
        if (out.size() > bytes_.size() - pos_)
            return base::makeError(base::ErrorCode::Image, "image %s ends early", name_.c_str());
        if (!out.empty())
            memcpy(out.data(), bytes_.data() + pos_, out.size());
        pos_ += out.size();
        return base::success();
    }
    int64_t size() const override { return static_cast<int64_t>(bytes_.size()); }
    const std::string& name() const override { return name_; }

private:
    std::string name_;
    std::string bytes_;
    size_t pos_ = 0;
};

class MemoryWriter : public formats::ImageWriter {
public:
    MemoryWriter(MemoryStore& store, std::string name) : store_(store), name_(std::move(name)) {}
    base::Result<void> write(std::span<const std::byte> data) override {
        bytes_.append(reinterpret_cast<const char*>(data.data()), data.size());
        return base::success();
    }
    base::Result<void> close() override {
        store_.put(name_, bytes_);
        return base::success();
    }
    uint64_t written() const override { return bytes_.size(); }

private:
    MemoryStore& store_;
    std::string name_;
    std::string bytes_;
};

bool safeComponent(std::string_view c) {
    if (c.empty() || c.size() > kMaxComponent || c == "." || c == "..")
        return false;
    return std::all_of(c.begin(), c.end(), [](char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               ch == '_' || ch == '.' || ch == '-' || ch == ':';
    });
}

} // namespace

Files splitFiles(std::string_view input) {
    Files out;
    size_t pos = 0;
    if (input.substr(0, kHeader.size()) != kHeader) {
        size_t next = input.find("\n==> ");
        out.preamble = std::string(input.substr(0, next));
        if (next == std::string_view::npos)
            return out;
        pos = next + 1;
    }
    while (pos < input.size()) {
        size_t nameStart = pos + kHeader.size();
        size_t eol = input.find('\n', nameStart);
        if (eol == std::string_view::npos) {
            out.files.emplace_back(std::string(input.substr(nameStart)), "");
            break;
        }
        size_t next = input.find("\n==> ", eol);
        size_t end = next == std::string_view::npos ? input.size() : next;
        // The content runs from after the header line to the next separator; a header right
        // after a header line ("==> a\n==> b") leaves the first file empty.
        std::string_view content =
            next == eol ? std::string_view() : input.substr(eol + 1, end - eol - 1);
        out.files.emplace_back(std::string(input.substr(nameStart, eol - nameStart)),
                               std::string(content));
        if (next == std::string_view::npos)
            break;
        pos = next + 1;
    }
    return out;
}

std::string joinFiles(const Files& files) {
    std::string out = files.preamble;
    for (const auto& [name, content] : files.files) {
        if (!out.empty())
            out += '\n';
        out += std::string(kHeader) + name + "\n" + content;
    }
    return out;
}

std::vector<std::string_view> splitLines(std::string_view input) {
    std::vector<std::string_view> lines;
    while (true) {
        size_t eol = input.find('\n');
        lines.push_back(input.substr(0, eol));
        if (eol == std::string_view::npos)
            return lines;
        input.remove_prefix(eol + 1);
    }
}

base::Result<std::unique_ptr<formats::ImageWriter>>
MemoryStore::openWrite(const std::string& name) {
    return std::unique_ptr<formats::ImageWriter>(std::make_unique<MemoryWriter>(*this, name));
}

base::Result<std::unique_ptr<formats::ImageReader>> MemoryStore::openRead(const std::string& name) {
    auto it = images_.find(name);
    if (it == images_.end())
        return base::makeError(base::ErrorCode::Image, "no image %s", name.c_str());
    return std::unique_ptr<formats::ImageReader>(std::make_unique<MemoryReader>(name, it->second));
}

bool MemoryStore::exists(const std::string& name) {
    return images_.count(name) != 0;
}

void MemoryStore::put(const std::string& name, std::string_view bytes) {
    images_[name] = std::string(bytes);
}

bool safeRelativePath(std::string_view path, unsigned maxDepth) {
    if (!path.empty() && path.back() == '/')
        path.remove_suffix(1);
    unsigned depth = 0;
    while (true) {
        size_t slash = path.find('/');
        if (!safeComponent(path.substr(0, slash)) || ++depth > maxDepth)
            return false;
        if (slash == std::string_view::npos)
            return true;
        path.remove_prefix(slash + 1);
    }
}

namespace {

// Hands each file of `files` that safeRelativePath keeps to `dir(name)` (a name ending in '/')
// or `file(name, content)`.
template <typename OnDir, typename OnFile>
void forEachKept(const Files& files, unsigned maxDepth, OnDir dir, OnFile file) {
    for (const auto& [name, content] : files.files) {
        if (!safeRelativePath(name, maxDepth))
            continue;
        if (name.back() == '/')
            dir(name);
        else
            file(name, content);
    }
}

} // namespace

void writeTree(const std::string& root, const Files& files, unsigned maxDepth) {
    std::error_code ec;
    fs::create_directories(root, ec);
    forEachKept(
        files, maxDepth,
        [&](const std::string& name) { fs::create_directories(fs::path(root) / name, ec); },
        [&](const std::string& name, const std::string& content) {
            fs::path path = fs::path(root) / name;
            fs::create_directories(path.parent_path(), ec);
            if (ec || fs::is_directory(path, ec))
                return;
            std::ofstream(path, std::ios::binary) << content;
        });
}

void addTree(topology::sysfs::MemoryTree* tree, const std::string& root, const Files& files,
             unsigned maxDepth) {
    tree->addDir(root);
    forEachKept(
        files, maxDepth, [&](const std::string& name) { tree->addDir(root + "/" + name); },
        [&](const std::string& name, const std::string& content) {
            tree->addFile(root + "/" + name, content);
        });
}

Files readTree(const std::string& root) {
    Files out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
        if (!it->is_regular_file(ec))
            continue;
        std::ifstream in(it->path(), std::ios::binary);
        std::ostringstream content;
        content << in.rdbuf();
        out.files.emplace_back(fs::relative(it->path(), root, ec).string(), content.str());
    }
    std::sort(out.files.begin(), out.files.end());
    return out;
}

const std::string& scratchDir() {
    static const std::string dir = [] {
        std::error_code ec;
        std::string base =
            fs::is_directory("/dev/shm", ec) ? "/dev/shm" : fs::temp_directory_path(ec).string();
        std::string tmpl = base + "/criu-amdgpu-fuzz-XXXXXX";
        std::vector<char> buf(tmpl.begin(), tmpl.end());
        buf.push_back('\0');
        std::string made = mkdtemp(buf.data()) ? buf.data() : base;
        static std::string removeAtExit;
        removeAtExit = made;
        atexit([] {
            std::error_code e;
            fs::remove_all(removeAtExit, e);
        });
        return made;
    }();
    return dir;
}

} // namespace fuzzsupport
