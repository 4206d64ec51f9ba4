#include "formats/chunk_map.h"

#include "little_endian.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace formats {

using base::Error;
using base::ErrorCode;
using base::makeError;
using base::Result;
using base::strFormat;

namespace {

constexpr char kMagic[8] = {'A', 'M', 'D', 'G', 'P', 'U', 'C', 'M'};
constexpr uint32_t kVersion = 1;
constexpr size_t kEntryHeader = 4 + 4 + 8 + 8 + 8 + 8;
constexpr size_t kChunkBytes = 1 + 16;

template <typename T> void put(std::string& out, T value) {
    le::append(out, value);
}

/// Reads little-endian fields off the front of the bytes, naming the file in its errors.
class Cursor {
public:
    Cursor(std::string_view bytes, const std::string& file) : bytes_(bytes), file_(file) {}

    template <typename T> Result<T> take(const char* field) {
        if (bytes_.size() - at_ < sizeof(T))
            return makeError(ErrorCode::Image, "%s: ends inside %s (byte %zu of %zu)",
                             file_.c_str(), field, at_, bytes_.size());
        uint64_t v = 0;
        for (size_t i = 0; i < sizeof(T); ++i)
            v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[at_ + i])) << (8 * i);
        at_ += sizeof(T);
        return static_cast<T>(v);
    }
    /// The next `length` bytes (the caller checked they are there).
    Result<std::string> takeString(size_t length) {
        std::string s(bytes_.substr(at_, length));
        at_ += length;
        return s;
    }
    size_t left() const { return bytes_.size() - at_; }

private:
    std::string_view bytes_;
    const std::string& file_;
    size_t at_ = 0;
};

Error bad(const std::string& file, const std::string& what) {
    return makeError(ErrorCode::Image, "%s: %s", file.c_str(), what.c_str());
}

} // namespace

ChunkSum chunkSumOf(std::span<const std::byte> data) {
    XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
    return {h.low64, h.high64};
}

ChunkSums::ChunkSums(uint64_t chunkSize) : chunkSize_(chunkSize), state_(XXH3_createState()) {
    XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}

ChunkSums::~ChunkSums() {
    XXH3_freeState(static_cast<XXH3_state_t*>(state_));
}

void ChunkSums::feed(std::span<const std::byte> bytes) {
    auto* state = static_cast<XXH3_state_t*>(state_);
    while (!bytes.empty()) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(bytes.size(), chunkSize_ - inChunk_));
        XXH3_128bits_update(state, bytes.data(), n);
        inChunk_ += n;
        bytes = bytes.subspan(n);
        if (inChunk_ == chunkSize_)
            endChunk();
    }
}

const std::vector<ChunkSum>& ChunkSums::finish() {
    if (inChunk_)
        endChunk();
    return sums_;
}

void ChunkSums::endChunk() {
    auto* state = static_cast<XXH3_state_t*>(state_);
    XXH128_hash_t h = XXH3_128bits_digest(state);
    sums_.push_back({h.low64, h.high64});
    XXH3_128bits_reset(state);
    inChunk_ = 0;
}

const BoChunks* ChunkMap::find(const BoKey& key) const {
    auto it = std::find_if(bos.begin(), bos.end(), [&](const BoChunks& b) { return b.key == key; });
    return it == bos.end() ? nullptr : &*it;
}

const BoChunks* ChunkMap::findFile(const std::string& file) const {
    for (const BoChunks& bo : bos)
        if (bo.file == file)
            return &bo;
    return nullptr;
}

uint64_t chunkCount(uint64_t size, uint64_t chunkSize) {
    return size / chunkSize + (size % chunkSize ? 1 : 0);
}

BoChunks sumChunks(const BoKey& key, uint64_t chunkSize, std::span<const std::byte> data,
                   const std::string& file) {
    BoChunks bo{key, chunkSize, {}, file};
    for (uint64_t at = 0; at < data.size(); at += chunkSize)
        bo.chunks.push_back(
            {ChunkPlace::Here,
             chunkSumOf(data.subspan(at, std::min<uint64_t>(chunkSize, data.size() - at)))});
    return bo;
}

uint64_t markInParent(BoChunks& current, const ChunkMap& parent) {
    const BoChunks* old = parent.find(current.key);
    bool comparable =
        old && old->chunkSize == current.chunkSize && old->chunks.size() == current.chunks.size();
    uint64_t here = 0;
    for (size_t i = 0; i < current.chunks.size(); ++i) {
        ChunkRecord& c = current.chunks[i];
        c.place =
            comparable && old->chunks[i].sum == c.sum ? ChunkPlace::InParent : ChunkPlace::Here;
        if (c.place == ChunkPlace::Here) {
            uint64_t start = i * current.chunkSize;
            here += std::min(current.chunkSize, current.key.size - start);
        }
    }
    return here;
}

std::string encodeChunkMap(const ChunkMap& map) {
    std::string out(kMagic, sizeof kMagic);
    put<uint32_t>(out, kVersion);
    put<uint32_t>(out, static_cast<uint32_t>(map.parent.size()));
    out += map.parent;
    put<uint64_t>(out, map.parentRecord.low);
    put<uint64_t>(out, map.parentRecord.high);
    put<uint32_t>(out, static_cast<uint32_t>(map.bos.size()));
    for (const BoChunks& bo : map.bos) {
        put<uint32_t>(out, bo.key.gpuId);
        put<uint32_t>(out, 0);
        put<uint64_t>(out, bo.key.va);
        put<uint64_t>(out, bo.key.size);
        put<uint64_t>(out, bo.chunkSize);
        put<uint64_t>(out, bo.chunks.size());
        for (const ChunkRecord& c : bo.chunks) {
            put<uint8_t>(out, static_cast<uint8_t>(c.place));
            put<uint64_t>(out, c.sum.low);
            put<uint64_t>(out, c.sum.high);
        }
        put<uint32_t>(out, static_cast<uint32_t>(bo.file.size()));
        out += bo.file;
    }
    return out;
}

Result<ChunkMap> decodeChunkMap(std::string_view bytes, const std::string& file) {
    if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        return bad(file,
                   "not an incremental chunk record (its first 8 bytes are not \"AMDGPUCM\")");
    Cursor in(bytes.substr(sizeof kMagic), file);
    HAL_TRY_ASSIGN(uint32_t version, in.take<uint32_t>("the version"));
    if (version != kVersion)
        return bad(file, strFormat("version %u, this build reads version %u", version, kVersion));
    ChunkMap map;
    HAL_TRY_ASSIGN(uint32_t parentLength, in.take<uint32_t>("the parent path's length"));
    if (parentLength > kMaxParentPath || parentLength > in.left())
        return bad(file, strFormat("a parent path of %u bytes (at most %u, %zu remain)",
                                   parentLength, kMaxParentPath, in.left()));
    HAL_TRY_ASSIGN(map.parent, in.takeString(parentLength));
    if (map.parent.find('\0') != std::string::npos)
        return bad(file, "its parent path holds a NUL byte");
    HAL_TRY_ASSIGN(map.parentRecord.low, in.take<uint64_t>("the parent record's checksum"));
    HAL_TRY_ASSIGN(map.parentRecord.high, in.take<uint64_t>("the parent record's checksum"));
    HAL_TRY_ASSIGN(uint32_t entries, in.take<uint32_t>("the entry count"));
    if (entries > in.left() / kEntryHeader)
        return bad(file, strFormat("%u entries do not fit in its %zu remaining bytes", entries,
                                   in.left()));
    std::set<std::string> files; // each BO's contents have a file of their own
    for (uint32_t e = 0; e < entries; ++e) {
        BoChunks bo;
        HAL_TRY_ASSIGN(bo.key.gpuId, in.take<uint32_t>("a GPU id"));
        HAL_TRY_ASSIGN(uint32_t flags, in.take<uint32_t>("the flags"));
        HAL_TRY_ASSIGN(bo.key.va, in.take<uint64_t>("a VA"));
        HAL_TRY_ASSIGN(bo.key.size, in.take<uint64_t>("a BO size"));
        HAL_TRY_ASSIGN(bo.chunkSize, in.take<uint64_t>("a chunk size"));
        HAL_TRY_ASSIGN(uint64_t count, in.take<uint64_t>("a chunk count"));
        std::string what = strFormat("entry %u (GPU 0x%x, VA 0x%llx, %llu bytes)", e, bo.key.gpuId,
                                     static_cast<unsigned long long>(bo.key.va),
                                     static_cast<unsigned long long>(bo.key.size));
        if (flags != 0)
            return bad(file, strFormat("%s: flags 0x%x, none are defined", what.c_str(), flags));
        if (bo.chunkSize < kMinIncrementChunk || (bo.chunkSize & (bo.chunkSize - 1)) != 0)
            return bad(file,
                       strFormat("%s: chunk size %llu is not a power of two of 4096 or more",
                                 what.c_str(), static_cast<unsigned long long>(bo.chunkSize)));
        if (count != chunkCount(bo.key.size, bo.chunkSize))
            return bad(file, strFormat("%s: %llu chunks, its size needs %llu", what.c_str(),
                                       static_cast<unsigned long long>(count),
                                       static_cast<unsigned long long>(
                                           chunkCount(bo.key.size, bo.chunkSize))));
        if (count > in.left() / kChunkBytes)
            return bad(file,
                       strFormat("%s: %llu chunks do not fit in its %zu remaining bytes",
                                 what.c_str(), static_cast<unsigned long long>(count), in.left()));
        bo.chunks.resize(count);
        for (ChunkRecord& c : bo.chunks) {
            HAL_TRY_ASSIGN(uint8_t place, in.take<uint8_t>("a chunk's place"));
            if (place > static_cast<uint8_t>(ChunkPlace::InParent))
                return bad(file, strFormat("%s: chunk place %u (0: here, 1: in parent)",
                                           what.c_str(), place));
            c.place = static_cast<ChunkPlace>(place);
            if (c.place == ChunkPlace::InParent && map.parent.empty())
                return bad(file, strFormat("%s: a chunk is in the parent, and it names none",
                                           what.c_str()));
            HAL_TRY_ASSIGN(c.sum.low, in.take<uint64_t>("a checksum"));
            HAL_TRY_ASSIGN(c.sum.high, in.take<uint64_t>("a checksum"));
        }
        HAL_TRY_ASSIGN(uint32_t nameLength, in.take<uint32_t>("a file name's length"));
        if (nameLength == 0 || nameLength > kMaxChunkFileName || nameLength > in.left())
            return bad(file, strFormat("%s: a file name of %u bytes (1 to %u, %zu remain)",
                                       what.c_str(), nameLength, kMaxChunkFileName, in.left()));
        HAL_TRY_ASSIGN(bo.file, in.takeString(nameLength));
        if (bo.file.find_first_of(std::string("/\0", 2)) != std::string::npos)
            return bad(file,
                       strFormat("%s: its file name holds a '/' or a NUL byte", what.c_str()));
        if (!files.insert(bo.file).second)
            return bad(file, strFormat("%s: a second BO in %s", what.c_str(), bo.file.c_str()));
        map.bos.push_back(std::move(bo));
    }
    if (in.left() != 0)
        return bad(file, strFormat("%zu bytes after its last entry", in.left()));
    return map;
}

} // namespace formats
