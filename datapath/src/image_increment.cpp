#include "datapath/image_increment.h"

#include "formats/content_keys.h"
#include "formats/framed_image.h"
#include "formats/image_names.h"
#include "formats/image_tag.h"
#include "formats/packed_image.h"

#include <algorithm>
#include <filesystem>

namespace datapath {

using base::ErrorCode;
using base::makeError;
using base::Result;
using base::success;
using formats::BoChunks;
using formats::BoKey;
using formats::ChainBudget;
using formats::ChainLevel;
using formats::ChunkMap;
using formats::chunkMapImageName;
using formats::ChunkPlace;
using formats::Codec;
using formats::CodecSpec;
using formats::DrmBoEntry;
using formats::encodeChunkMap;
using formats::ImageStore;
using formats::ImageWriter;
using formats::kDefaultIncrementChunk;
using formats::kMinIncrementChunk;
using formats::levelHolding;
using formats::loadChain;
using formats::openContentsImage;
using formats::packedImageName;
using formats::parentDirectory;
using formats::storedContentsName;
using formats::withOurPrefix;
using formats::writeImageTag;

namespace fs = std::filesystem;

namespace {

bool isRecordName(const std::string& name) {
    return name.starts_with("amdgpu-chunks-") && name.ends_with(".img");
}

} // namespace

std::string deltaImageName(const std::string& name) {
    return withOurPrefix(name, "amdgpu-delta-");
}

Result<IncrementalDump> IncrementalDump::open(ImageStore& store, const std::string& parentOption) {
    IncrementalDump dump;
    if (!parentOption.empty() && !store.rereadable())
        return makeError(ErrorCode::Config,
                         "parent-images %s: an incremental checkpoint needs an image directory, "
                         "and this one goes through criu's image streamer",
                         parentOption.c_str());
    HAL_TRY_ASSIGN(dump.parentDir_, parentDirectory(store, parentOption));
    HAL_TRY_ASSIGN(dump.sealKeys_, store.contentKeys().prepareDump(store, dump.parentDir_));
    if (!dump.parentDir_)
        return dump;
    HAL_TRY_ASSIGN(std::vector<std::string> names, store.listDirectory(*dump.parentDir_));
    ChainBudget budget; // the parent's chains together
    for (const std::string& name : names) {
        if (!isRecordName(name))
            continue;
        ParentRecord record;
        record.name = (fs::path(*dump.parentDir_) / name).lexically_normal().string();
        HAL_TRY_ASSIGN_CONTEXT(std::vector<ChainLevel> chain,
                               loadChain(store, record.name, &budget),
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

std::string IncrementalDump::contentsName(const std::string& name, const CodecSpec& spec) const {
    std::string stored = hasParent() ? deltaImageName(name) : name;
    return spec.codec == Codec::None && !sealKeys_ ? stored : packedImageName(stored);
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
    if (parent) { // without one, the lane marked no chunk "in parent"
        map.parent = parent->name;
        map.parentRecord = parent->sum;
    }
    std::string bytes = encodeChunkMap(map);
    std::string name = chunkMapImageName(id);
    HAL_TRY_ASSIGN(std::unique_ptr<ImageWriter> out, store.openWrite(name));
    HAL_TRY(out->write(std::as_bytes(std::span(bytes.data(), bytes.size()))));
    HAL_TRY(out->close());
    std::optional<std::string> parentDir;
    if (parent)
        parentDir = fs::path(parent->name).parent_path().string();
    return writeImageTag(store, name, std::as_bytes(std::span(bytes.data(), bytes.size())),
                         parentDir);
}

BoKey boKeyOf(uint32_t gpuId, const DrmBoEntry& bo) {
    return BoKey{gpuId, bo.vms.empty() ? 0 : bo.vms.front().addr, bo.size};
}

uint64_t incrementChunkFor(uint64_t slotSize) {
    uint64_t chunk = kDefaultIncrementChunk;
    while (chunk > kMinIncrementChunk && (chunk > slotSize || slotSize % chunk != 0))
        chunk /= 2;
    return chunk;
}

Result<FileIncrement> FileIncrement::attach(const IncrementalDump& dump,
                                            std::vector<DumpImage>& images,
                                            const std::vector<BoKey>& keys, uint64_t slotSize) {
    if (keys.size() != images.size())
        return makeError(ErrorCode::Internal, "%zu BO keys for %zu contents images", keys.size(),
                         images.size());
    FileIncrement increment(dump, dump.match(keys), images.size());
    uint64_t chunkSize = incrementChunkFor(slotSize);
    for (size_t i = 0; i < images.size(); ++i) {
        if (images[i].pieces.size() != 1)
            return makeError(ErrorCode::Internal,
                             "%s: %zu pieces, an incremental image holds one BO",
                             images[i].name.c_str(), images[i].pieces.size());
        increment.chunks_[i] = BoChunks{keys[i], chunkSize, {}, images[i].name};
        ContentPiece& piece = images[i].pieces.front();
        piece.chunks = &increment.chunks_[i];
        piece.parent = increment.parent_ ? increment.parent_->map.find(keys[i]) : nullptr;
        piece.identity = dump.sealKeys();
    }
    return increment;
}

Result<void> FileIncrement::writeRecord(ImageStore& store, uint32_t id) const {
    return dump_->writeRecord(store, id, chunks_, parent_);
}

Result<std::shared_ptr<const RestoreChain>> RestoreChain::load(ImageStore& store, uint32_t id,
                                                               ChainBudget* budget) {
    std::string name = chunkMapImageName(id);
    if (!store.rereadable() || !store.exists(name))
        return std::shared_ptr<const RestoreChain>();
    HAL_TRY_ASSIGN(std::vector<ChainLevel> levels, loadChain(store, name, budget));
    if (levels.size() == 1)
        return std::shared_ptr<const RestoreChain>();
    return std::shared_ptr<const RestoreChain>(new RestoreChain(store, std::move(levels)));
}

Result<void> nameRestoreImage(ImageStore& store, const RestoreChain* chain, RestoreImage& image,
                              const BoKey& key) {
    if (chain)
        return chain->attach(image, key);
    image.name = storedContentsName(store, image.name);
    fetchFilesAhead(image, store, {image.name});
    return success();
}

Result<void> RestoreChain::attach(RestoreImage& image, const BoKey& key) const {
    const ChainLevel& newest = levels_.front();
    const BoChunks* here = nullptr;
    for (const std::string& name :
         {deltaImageName(image.name), image.name, packedImageName(deltaImageName(image.name)),
          packedImageName(image.name)})
        if (!here)
            here = newest.map.findFile(name);
    if (!here || !(here->key == key))
        return makeError(
            ErrorCode::Image, "%s: holds no BO of GPU 0x%x at VA 0x%llx (%llu bytes) in %s",
            newest.record.c_str(), key.gpuId, static_cast<unsigned long long>(key.va),
            static_cast<unsigned long long>(key.size), deltaImageName(image.name).c_str());
    image.name = here->file;
    image.chainChunk = here->chunkSize;
    image.holder.clear();
    std::span<const ChainLevel> parents = std::span(levels_).subspan(1);
    size_t deepest = 0;
    for (uint64_t c = 0; c < here->chunks.size(); ++c) {
        size_t level = 0;
        if (here->chunks[c].place == ChunkPlace::InParent) {
            HAL_TRY_ASSIGN(size_t above, levelHolding(parents, key, c));
            level = above + 1;
        }
        image.holder.push_back(static_cast<uint32_t>(level));
        deepest = std::max(deepest, level);
    }
    image.parents.clear();
    std::vector<std::string> files{image.name};
    for (size_t level = 1; level <= deepest; ++level) {
        const BoChunks* bo = levels_[level].map.find(key);
        if (bo->chunkSize != here->chunkSize)
            return makeError(ErrorCode::Image, "%s: chunks of %llu bytes, %s's of %llu",
                             levels_[level].record.c_str(),
                             static_cast<unsigned long long>(bo->chunkSize), newest.record.c_str(),
                             static_cast<unsigned long long>(here->chunkSize));
        std::string file = levels_[level].nameOf(bo->file);
        image.parents.push_back([store = store_, file] { return openContentsImage(*store, file); });
        files.push_back(file);
    }
    fetchFilesAhead(image, *store_, std::move(files));
    if (deepest == 0) {
        image.holder.clear();
        image.chainChunk = 0;
    }
    return success();
}

} // namespace datapath
