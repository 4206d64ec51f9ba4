#include "hal/image_increment.h"

#include "hal/framed_image.h"

#include <algorithm>
#include <filesystem>

namespace hal {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kOurPrefix = "amdgpu-";
constexpr std::string_view kDeltaPrefix = "amdgpu-delta-";

bool isRecordName(const std::string& name) {
    return name.starts_with("amdgpu-chunks-") && name.ends_with(".img");
}

} // namespace

std::string deltaImageName(const std::string& name) {
    if (name.starts_with(kDeltaPrefix) || !name.starts_with(kOurPrefix))
        return name;
    return std::string(kDeltaPrefix) + name.substr(kOurPrefix.size());
}

Result<IncrementalDump> IncrementalDump::open(ImageStore& store, const std::string& parentOption) {
    IncrementalDump dump;
    if (!parentOption.empty() && !store.rereadable())
        return makeError(ErrorCode::Config,
                         "parent-images %s: an incremental checkpoint needs an image directory, "
                         "and this one goes through criu's image streamer",
                         parentOption.c_str());
    HAL_TRY_ASSIGN(dump.parentDir_, parentDirectory(store, parentOption));
    if (!dump.parentDir_)
        return dump;
    HAL_TRY_ASSIGN(std::vector<std::string> names, store.listDirectory(*dump.parentDir_));
    for (const std::string& name : names) {
        if (!isRecordName(name))
            continue;
        ParentRecord record;
        record.name = (fs::path(*dump.parentDir_) / name).lexically_normal().string();
        HAL_TRY_ASSIGN_CONTEXT(std::vector<ChainLevel> chain, loadChain(store, record.name),
                               "checking the parent checkpoint %s", dump.parentDir_->c_str());
        record.sum = chain.front().recordSum;
        record.map = std::move(chain.front().map);
        dump.records_.push_back(std::move(record));
    }
    if (dump.records_.empty())
        return makeError(ErrorCode::Image,
                         "%s%s: holds no chunk record (amdgpu-chunks-*.img), so it cannot be the "
                         "parent of an incremental checkpoint (only this plugin's dumps leave one)",
                         dump.parentDir_->c_str(),
                         parentOption.empty() ? " (criu's parent link)"
                                              : " (option parent-images)");
    return dump;
}

std::string IncrementalDump::contentsName(const std::string& name) const {
    return hasParent() ? deltaImageName(name) : name;
}

const ParentRecord* IncrementalDump::match(std::span<const BoKey> keys) const {
    const ParentRecord* best = nullptr;
    size_t bestCount = 0;
    for (const ParentRecord& record : records_) {
        size_t count =
            static_cast<size_t>(std::count_if(keys.begin(), keys.end(), [&](const BoKey& k) {
                return record.map.find(k) != nullptr;
            }));
        if (count > bestCount) {
            best = &record;
            bestCount = count;
        }
    }
    return best;
}

Result<void> IncrementalDump::writeRecord(ImageStore& store, uint32_t id,
                                          const std::vector<BoChunks>& bos,
                                          const ParentRecord* parent) const {
    if (!store.rereadable())
        return success(); // through criu's image streamer: no checkpoint there can be a parent
    ChunkMap map;
    map.bos = bos;
    if (parent) {
        map.parent = parent->name;
        map.parentRecord = parent->sum;
    } else {
        for (BoChunks& bo : map.bos)
            for (ChunkRecord& c : bo.chunks)
                c.place = ChunkPlace::Here;
    }
    std::string bytes = encodeChunkMap(map);
    std::string name = chunkMapImageName(id);
    HAL_TRY_ASSIGN(std::unique_ptr<ImageWriter> out, store.openWrite(name));
    HAL_TRY(out->write(std::as_bytes(std::span(bytes.data(), bytes.size()))));
    return out->close();
}

Result<std::shared_ptr<const RestoreChain>> RestoreChain::load(ImageStore& store, uint32_t id) {
    std::string name = chunkMapImageName(id);
    if (!store.rereadable() || !store.exists(name))
        return std::shared_ptr<const RestoreChain>();
    HAL_TRY_ASSIGN(std::vector<ChainLevel> levels, loadChain(store, name));
    if (levels.size() == 1)
        return std::shared_ptr<const RestoreChain>();
    return std::shared_ptr<const RestoreChain>(new RestoreChain(store, std::move(levels)));
}

Result<void> RestoreChain::attach(RestoreImage& image, const BoKey& key) const {
    const BoChunks* here = levels_.front().map.find(key);
    if (!here)
        return makeError(ErrorCode::Image, "%s: holds no BO of GPU 0x%x at VA 0x%llx (%llu bytes)",
                         levels_.front().record.c_str(), key.gpuId,
                         static_cast<unsigned long long>(key.va),
                         static_cast<unsigned long long>(key.size));
    image.name = here->file;
    image.chainChunk = here->chunkSize;
    image.holder.clear();
    size_t deepest = 0;
    for (uint64_t c = 0; c < here->chunks.size(); ++c) {
        HAL_TRY_ASSIGN(size_t level, levelHolding(levels_, key, c));
        image.holder.push_back(static_cast<uint32_t>(level));
        deepest = std::max(deepest, level);
    }
    image.parents.clear();
    for (size_t level = 1; level <= deepest; ++level) {
        const BoChunks* bo = levels_[level].map.find(key);
        if (bo->chunkSize != here->chunkSize)
            return makeError(
                ErrorCode::Image, "%s: chunks of %llu bytes, %s's of %llu",
                levels_[level].record.c_str(), static_cast<unsigned long long>(bo->chunkSize),
                levels_.front().record.c_str(), static_cast<unsigned long long>(here->chunkSize));
        std::string file = levels_[level].nameOf(bo->file);
        image.parents.push_back([store = store_, file] { return openFramedImage(*store, file); });
    }
    if (deepest == 0)
        image.holder.clear(), image.chainChunk = 0;
    return success();
}

} // namespace hal
