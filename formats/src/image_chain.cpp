#include "formats/image_chain.h"

#include "formats/image_open.h"
#include "formats/image_tag.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;
using base::strFormat;
using base::success;

namespace fs = std::filesystem;

namespace {

uint64_t chunkBytes(const BoChunks& bo, size_t i) {
    uint64_t start = i * bo.chunkSize;
    return std::min(bo.chunkSize, bo.key.size - start);
}

} // namespace

std::string chunkMapImageName(uint32_t id) {
    return strFormat("amdgpu-chunks-%u.img", id);
}

Result<std::optional<std::string>> parentDirectory(ImageStore& store,
                                                   const std::string& parentOption) {
    if (!parentOption.empty()) {
        std::string dir = fs::path(parentOption).lexically_normal().string();
        auto listed = store.listDirectory(dir);
        if (!listed.ok())
            return makeError(
                ErrorCode::Config,
                "parent-images %s: not a directory the checkpoint can use (the option is "
                "relative to the image directory, %s): %s",
                parentOption.c_str(), store.describe().c_str(), listed.error().message().c_str());
        return std::optional<std::string>(dir);
    }
    if (!store.rereadable() || !store.exists("parent") || !store.listDirectory("parent").ok())
        return std::optional<std::string>();
    return std::optional<std::string>("parent");
}

std::string ChainLevel::nameOf(const std::string& file) const {
    return dir.empty() ? file : (fs::path(dir) / file).lexically_normal().string();
}

Result<void> ChainBudget::take(uint64_t bytes, const std::string& record) {
    if (bytes > left_)
        return makeError(ErrorCode::Image,
                         "%s: %llu more bytes of chunk records than the %llu MiB a checkpoint's "
                         "chains may read in all (a crafted checkpoint?)",
                         record.c_str(), static_cast<unsigned long long>(bytes - left_),
                         static_cast<unsigned long long>(kMaxChainBudget >> 20));
    left_ -= bytes;
    return success();
}

Result<std::string> readWholeImage(ImageStore& store, const std::string& name,
                                   ChainBudget& budget) {
    HAL_TRY_ASSIGN(std::unique_ptr<ImageReader> reader, store.openRead(name));
    int64_t size = reader->size();
    if (size < 0 || static_cast<uint64_t>(size) > kMaxChunkRecordBytes)
        return makeError(ErrorCode::Image,
                         "%s: %lld bytes is not the size of a chunk record (at most %llu MiB)",
                         name.c_str(), static_cast<long long>(size),
                         static_cast<unsigned long long>(kMaxChunkRecordBytes >> 20));
    HAL_TRY(budget.take(static_cast<uint64_t>(size), name));
    std::string bytes(static_cast<size_t>(size), '\0');
    HAL_TRY(reader->readExact(std::as_writable_bytes(std::span(bytes.data(), bytes.size()))));
    return bytes;
}

Result<std::vector<ChainLevel>> loadChain(ImageStore& store, const std::string& recordName,
                                          ChainBudget* budget) {
    ChainBudget own;
    ChainBudget& bytesLeft = budget ? *budget : own;
    std::vector<ChainLevel> chain;
    std::set<std::string> seen;
    std::string record = fs::path(recordName).lexically_normal().string();
    std::optional<ChunkSum> expected;
    while (true) {
        if (chain.size() == kMaxChainDepth)
            return makeError(ErrorCode::Image, "%s: a chain deeper than %zu images",
                             chain.front().record.c_str(), kMaxChainDepth);
        if (!seen.insert(record).second)
            return makeError(ErrorCode::Image, "%s: its parent %s is already in its chain (a loop)",
                             chain.back().record.c_str(), record.c_str());
        ChainLevel level;
        level.record = record;
        level.dir = fs::path(record).parent_path().string();
        auto bytes = readWholeImage(store, record, bytesLeft);
        if (!bytes.ok()) {
            if (!chain.empty())
                return makeError(ErrorCode::Image,
                                 "%s: the parent image's chunk record is missing (named by %s): %s",
                                 record.c_str(), chain.back().record.c_str(),
                                 bytes.error().message().c_str());
            return std::move(bytes).error();
        }
        level.recordSum =
            chunkSumOf(std::as_bytes(std::span(bytes.value().data(), bytes.value().size())));
        if (expected && !(*expected == level.recordSum))
            return makeError(ErrorCode::Image,
                             "%s: the parent image changed after %s was dumped against it (its "
                             "checksum is not the one recorded)",
                             record.c_str(), chain.back().record.c_str());
        HAL_TRY_ASSIGN(level.map, decodeChunkMap(bytes.value(), record));
        std::string parent = level.map.parent;
        expected = level.map.parentRecord;
        std::string dir = level.dir;
        std::string next;
        if (!parent.empty()) {
            // Checked before anything is opened: a crafted record must not make a reader open a
            // host file, a device node or a FIFO it names.
            next = (fs::path(dir) / parent).lexically_normal().string();
            HAL_TRY(checkImagePath(next, record + ": its parent " + parent));
            if (fs::path(next).filename().empty())
                return makeError(ErrorCode::Image, "%s: its parent %s names no record file",
                                 record.c_str(), parent.c_str());
        }
        // An encrypted checkpoint's record is tagged under its key, with the parent it was
        // dumped against (formats/image_tag.h).
        std::optional<std::string> parentDir;
        if (!next.empty())
            parentDir = fs::path(next).parent_path().string();
        HAL_TRY(checkImageTag(store, record,
                              std::as_bytes(std::span(bytes.value().data(), bytes.value().size())),
                              parentDir));
        chain.push_back(std::move(level));
        if (parent.empty())
            return chain;
        record = next;
    }
}

Result<size_t> levelHolding(std::span<const ChainLevel> chain, const BoKey& key, uint64_t chunk) {
    for (size_t i = 0; i < chain.size(); ++i) {
        const BoChunks* bo = chain[i].map.find(key);
        if (!bo || chunk >= bo->chunks.size())
            return makeError(
                ErrorCode::Image,
                "%s: holds no chunk %llu of the BO of GPU 0x%x at VA 0x%llx (%llu bytes)",
                chain[i].record.c_str(), static_cast<unsigned long long>(chunk), key.gpuId,
                static_cast<unsigned long long>(key.va), static_cast<unsigned long long>(key.size));
        if (bo->chunks[chunk].place == ChunkPlace::Here)
            return i;
    }
    return makeError(
        ErrorCode::Image, "%s: chunk %llu of a BO of GPU 0x%x is in a parent it names none",
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

} // namespace formats
