#include "hal/image_chain.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

namespace hal {
namespace fs = std::filesystem;

namespace {

std::string joinedDir(const std::string& base, const std::string& rel) {
    fs::path p(rel);
    return p.is_absolute() ? p.lexically_normal().string() : (fs::path(base) / p).lexically_normal().string();
}

uint64_t chunkBytes(const BoChunks& bo, size_t i) {
    uint64_t start = i * bo.chunkSize;
    return std::min(bo.chunkSize, bo.key.size - start);
}

} // namespace

std::string chunkMapImageName(uint32_t id) { return strFormat("amdgpu-chunks-%u.img", id); }

Result<std::optional<std::string>> parentDirectory(const std::string& imageDir,
                                                   const std::string& parentOption) {
    std::error_code ec;
    if (!parentOption.empty()) {
        std::string dir = joinedDir(imageDir, parentOption);
        if (!fs::is_directory(dir, ec))
            return makeError(ErrorCode::Config,
                             "parent-images %s: %s is not a directory (the option is relative to "
                             "the image directory %s)",
                             parentOption.c_str(), dir.c_str(), imageDir.c_str());
        return std::optional<std::string>(dir);
    }
    fs::path link = fs::path(imageDir) / "parent";
    fs::file_status st = fs::symlink_status(link, ec);
    if (ec || st.type() == fs::file_type::not_found)
        return std::optional<std::string>();
    if (!fs::is_directory(link, ec))
        return makeError(ErrorCode::Image, "%s: criu's parent link does not lead to a directory",
                         link.c_str());
    std::string target = fs::is_symlink(link, ec) ? fs::read_symlink(link, ec).string() : "parent";
    return std::optional<std::string>(joinedDir(imageDir, target));
}

Result<std::string> readWholeFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorCode::NotFound, "%s: cannot be read: %s", path.c_str(), strerror(errno));
    std::ostringstream s;
    s << in.rdbuf();
    if (in.bad())
        return makeError(ErrorCode::Io, "%s: read failed", path.c_str());
    return s.str();
}

Result<std::vector<ChainLevel>> loadChain(const std::string& imageDir, const std::string& recordName) {
    std::vector<ChainLevel> chain;
    std::set<std::string> seen;
    std::string dir = fs::path(imageDir).lexically_normal().string();
    std::optional<ChunkSum> expected;
    std::string child;
    while (true) {
        std::error_code ec;
        fs::path canon = fs::weakly_canonical(dir, ec);
        if (!seen.insert(ec ? dir : canon.string()).second)
            return makeError(ErrorCode::Image, "%s: the chain of parents loops back to %s",
                             chain.back().record.c_str(), dir.c_str());
        if (chain.size() == kMaxChainDepth)
            return makeError(ErrorCode::Image, "%s: a chain deeper than %zu images", imageDir.c_str(),
                             kMaxChainDepth);
        ChainLevel level;
        level.dir = dir;
        level.record = (fs::path(dir) / recordName).string();
        auto bytes = readWholeFile(level.record);
        if (!bytes.ok()) {
            if (!child.empty())
                return makeError(ErrorCode::Image,
                                 "%s: the parent image's chunk record is missing (named by %s): %s",
                                 level.record.c_str(), child.c_str(), bytes.error().message().c_str());
            return std::move(bytes).error();
        }
        level.recordSum = chunkSumOf(std::as_bytes(std::span(bytes.value().data(), bytes.value().size())));
        if (expected && !(*expected == level.recordSum))
            return makeError(ErrorCode::Image,
                             "%s: the parent image changed after %s was dumped against it (its "
                             "checksum is not the one recorded)",
                             level.record.c_str(), child.c_str());
        HAL_TRY_ASSIGN(level.map, decodeChunkMap(bytes.value(), level.record));
        std::string parent = level.map.parent;
        expected = level.map.parentRecord;
        child = level.record;
        chain.push_back(std::move(level));
        if (parent.empty())
            return chain;
        dir = joinedDir(dir, parent);
    }
}

Result<size_t> levelHolding(const std::vector<ChainLevel>& chain, const BoKey& key, uint64_t chunk) {
    for (size_t i = 0; i < chain.size(); ++i) {
        const BoChunks* bo = chain[i].map.find(key);
        if (!bo || chunk >= bo->chunks.size())
            return makeError(ErrorCode::Image,
                             "%s: holds no chunk %llu of the BO of GPU 0x%x at VA 0x%llx (%llu bytes)",
                             chain[i].record.c_str(), static_cast<unsigned long long>(chunk), key.gpuId,
                             static_cast<unsigned long long>(key.va),
                             static_cast<unsigned long long>(key.size));
        if (bo->chunks[chunk].place == ChunkPlace::Here)
            return i;
    }
    return makeError(ErrorCode::Image, "%s: chunk %llu of a BO of GPU 0x%x is in a parent it names none",
                     chain.back().record.c_str(), static_cast<unsigned long long>(chunk), key.gpuId);
}

std::vector<uint64_t> bytesPerLevel(const std::vector<ChainLevel>& chain) {
    std::vector<uint64_t> out;
    for (const ChainLevel& level : chain) {
        uint64_t n = 0;
        for (const BoChunks& bo : level.map.bos)
            for (size_t i = 0; i < bo.chunks.size(); ++i)
                if (bo.chunks[i].place == ChunkPlace::Here)
                    n += chunkBytes(bo, i);
        out.push_back(n);
    }
    return out;
}

} // namespace hal
