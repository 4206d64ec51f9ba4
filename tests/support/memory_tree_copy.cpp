#include "memory_tree_copy.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace testsupport {

namespace fs = std::filesystem;

std::string copyIntoMemory(topology::sysfs::MemoryTree* tree, const std::string& dir) {
    if (!tree->addDir(dir))
        return dir + ": not added";
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
        std::string path = it->path().string();
        fs::file_status st = it->symlink_status(ec);
        bool added = true;
        if (fs::is_symlink(st)) {
            added = tree->addLink(path, fs::read_symlink(it->path(), ec).string());
        } else if (fs::is_directory(st)) {
            added = tree->addDir(path);
        } else if (fs::is_regular_file(st)) {
            std::ifstream in(it->path(), std::ios::binary);
            std::ostringstream content;
            content << in.rdbuf();
            added = tree->addFile(path, content.str());
        }
        if (ec || !added)
            return path + ": " + (ec ? ec.message() : "not added");
    }
    return ec ? dir + ": " + ec.message() : "";
}

} // namespace testsupport
