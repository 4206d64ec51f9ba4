// The restore lane (runRestoreLane): images (and their parents' chunks) read into the slots,
// checked and copied to the GPU, the stages overlapped.
#include "datapath/content_pipeline.h"

#include "lane_machinery.h"

namespace hal {

using namespace lane_internal;

namespace {

Result<void> checkChain(const RestoreImage& image) {
    if (image.parents.empty())
        return success();
    uint64_t size = 0;
    for (const ContentPiece& p : image.pieces)
        size += p.size;
    if (image.chainChunk == 0 || image.holder.size() != chunkCount(size, image.chainChunk))
        return makeError(ErrorCode::Internal, "%s: %zu chunk holders for %llu bytes in chunks of %llu",
                         image.name.c_str(), image.holder.size(), static_cast<unsigned long long>(size),
                         static_cast<unsigned long long>(image.chainChunk));
    for (size_t i = 0; i < image.holder.size(); ++i)
        if (image.holder[i] > image.parents.size())
            return makeError(ErrorCode::Internal, "%s: chunk %zu held by image %u of a chain of %zu",
                             image.name.c_str(), i, image.holder[i], image.parents.size() + 1);
    return success();
}

/// Fills the chunks of `block`, bytes [at, at + block.size()) of the contents, that parents
/// hold: each parent reads the bytes of the chunks it holds into the block and passes over the
/// others (a regular file without reading them), so every byte of the contents is read from one
/// image only.
Result<void> readFromParents(const RestoreImage& image, std::vector<FramedImage>& parents,
                             uint64_t at, std::span<std::byte> block) {
    for (uint64_t off = 0; off < block.size();) {
        uint64_t chunk = (at + off) / image.chainChunk;
        uint64_t end = std::min<uint64_t>(block.size(), (chunk + 1) * image.chainChunk - at);
        for (size_t p = 0; p < parents.size(); ++p) {
            if (image.holder[chunk] == p + 1)
                HAL_TRY(parents[p].reader->readExact(block.subspan(off, end - off)));
            else
                HAL_TRY(parents[p].reader->skip(end - off));
        }
        off = end;
    }
    return success();
}

} // namespace

Result<LaneReport> runRestoreLane(std::vector<RestoreImage>& images, const LaneOptions& options) {
    for (const RestoreImage& image : images)
        HAL_TRY(checkChain(image));
    Lane<RestoreImage> lane(images, options);
    FramedImage file; // the I/O stage's open image
    std::vector<FramedImage> parents; // and its parents' (incremental images)
    std::optional<ContentDigest> digest;
    uint64_t keyed = 0; // the digest as the dump recorded it (ImageReader::keyedChecksum)
    uint64_t total = 0;
    // The I/O stage takes the checksum too, block by block right after reading each block.
    auto read = [&](const Chunk& c) {
        RestoreImage& image = images[c.image];
        auto step = [&]() -> Result<void> {
            if (c.firstOfImage) {
                HAL_TRY_ASSIGN(file, image.open());
                parents.clear();
                for (const auto& open : image.parents) {
                    HAL_TRY_ASSIGN(FramedImage parent, open());
                    parents.push_back(std::move(parent));
                }
                total = 0;
                digest.reset();
                if (options.hash && image.expected)
                    digest.emplace(image.expected->kind);
            }
            // A packed file's reader decodes a whole frame straight into the slot: blocks of a
            // frame each, which still fit the CPU's cache.
            size_t blockSize = std::max<size_t>(kHashBlock, file.reader->wholeReadBytes());
            if (c.length)
                HAL_TRY(forEachBlock(lane.slot(c), [&](std::span<std::byte> block) -> Result<void> {
                    HAL_TRY(file.reader->readExact(block));
                    if (!parents.empty()) {
                        uint64_t at = total + static_cast<uint64_t>(block.data() - lane.slot(c).data());
                        HAL_TRY(readFromParents(image, parents, at, block));
                    }
                    if (digest)
                        digest->update(block);
                    return success();
                }, blockSize));
            total += c.length;
            if (c.lastOfImage) {
                if (digest)
                    keyed = file.reader->keyedChecksum(digest->value());
                HAL_TRY(expectImageEnd(file, total));
                for (FramedImage& parent : parents)
                    HAL_TRY(expectImageEnd(parent, total));
                file = FramedImage{};
                parents.clear();
            }
            return success();
        };
        auto r = step();
        if (!r.ok()) {
            file = FramedImage{};
            parents.clear();
            lane.fail(std::move(r.error().addContext(strFormat(
                "while reading %s from %s", lane.where(c).c_str(), image.name.c_str()))));
            return false;
        }
        if (c.lastOfImage && digest) {
            auto verified = verifyChecksum(image.name, *image.expected, keyed);
            digest.reset();
            if (!verified.ok()) {
                lane.fail(std::move(verified.error().addContext(
                    strFormat("while restoring the contents of %s", options.gpu.c_str()))));
                return false;
            }
        }
        return true;
    };
    auto copy = [&](const Chunk& c) {
        if (!c.length)
            return true;
        ContentPiece& piece = images[c.image].pieces[c.piece];
        auto r = piece.sink->write(c.offset, lane.slot(c));
        if (r.ok())
            return true;
        lane.fail(std::move(r.error().addContext(strFormat(
            "while copying %s from %s", lane.where(c).c_str(), images[c.image].name.c_str()))));
        return false;
    };
    auto report = lane.run("restoring", "restored", read, copy);
    file = FramedImage{};
    parents.clear();
    return report;
}


} // namespace hal
