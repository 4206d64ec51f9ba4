// The restore lane (runRestoreLane): images (and their parents' chunks) read into the slots,
// checked and copied to the GPU, the stages overlapped.
#include "datapath/content_pipeline.h"

#include "lane_machinery.h"

namespace datapath {

using base::ErrorCode;
using base::makeError;
using base::Result;
using base::strFormat;
using base::success;
using content::ContentDigest;
using content::verifyChecksum;
using formats::chunkCount;
using formats::expectImageEnd;
using formats::FramedImage;

using namespace lane_internal;

namespace {

Result<void> checkChain(const RestoreImage& image) {
    if (image.parents.empty())
        return success();
    uint64_t size = 0;
    for (const ContentPiece& p : image.pieces)
        size += p.size;
    if (image.chainChunk == 0 || image.holder.size() != chunkCount(size, image.chainChunk))
        return makeError(
            ErrorCode::Internal, "%s: %zu chunk holders for %llu bytes in chunks of %llu",
            image.name.c_str(), image.holder.size(), static_cast<unsigned long long>(size),
            static_cast<unsigned long long>(image.chainChunk));
    for (size_t i = 0; i < image.holder.size(); ++i)
        if (image.holder[i] > image.parents.size())
            return makeError(ErrorCode::Internal,
                             "%s: chunk %zu held by image %u of a chain of %zu", image.name.c_str(),
                             i, image.holder[i], image.parents.size() + 1);
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

/// Asks the images after the one being read to be fetched (RestoreImage::readAhead) while the
/// bytes before them, what is left of the current image and of the images between, are fewer
/// than the window: storage that reads one image's last bytes has the next one's first bytes
/// queued behind them, and the restore does not wait for it at each image's start. Each image is
/// asked once, for its first window of bytes; its own reader asks for the rest as it goes
/// (content/read_ahead.h). Images smaller than the window are asked several at a time. The
/// first image is asked for before it is opened: storage reads its first bytes while the open
/// reads its header and, in an encrypted checkpoint, unwraps the key with the private key (2 to
/// 20 ms on this project's machines, with the disk idle before).
class FetchAhead {
public:
    FetchAhead(const std::vector<RestoreImage>& images, uint64_t window)
        : images_(images), window_(window) {
        for (const RestoreImage& image : images) {
            uint64_t size = 0;
            for (const ContentPiece& p : image.pieces)
                size += p.size;
            sizes_.push_back(size);
        }
    }
    /// The lane is about to open image `index` and read it; it is asked for now if it was not.
    void start(size_t index) {
        if (index < next_) {
            after_ -= sizes_[index];
        } else {
            ask(index);
            next_ = index + 1;
            after_ = 0;
        }
        current_ = index;
    }
    /// `done` bytes of the current image have been read.
    void at(uint64_t done) {
        uint64_t before = sizes_[current_] - std::min(done, sizes_[current_]) + after_;
        for (; window_ && next_ < images_.size() && before < window_; ++next_) {
            ask(next_);
            before += sizes_[next_];
            after_ += sizes_[next_];
        }
    }

private:
    void ask(size_t index) {
        if (window_ && images_[index].readAhead)
            images_[index].readAhead(std::min(window_, sizes_[index]));
    }

    const std::vector<RestoreImage>& images_;
    uint64_t window_;
    std::vector<uint64_t> sizes_;
    size_t current_ = 0;
    size_t next_ = 0;    ///< the first image not asked for yet
    uint64_t after_ = 0; ///< bytes of the images asked for after the current one
};

} // namespace

Result<LaneReport> runRestoreLane(std::vector<RestoreImage>& images, const LaneOptions& options) {
    for (const RestoreImage& image : images)
        HAL_TRY(checkChain(image));
    Lane<RestoreImage> lane(images, options);
    FramedImage file;                 // the I/O stage's open image
    std::vector<FramedImage> parents; // and its parents' (incremental images)
    std::optional<ContentDigest> digest;
    uint64_t keyed = 0; // the digest as the dump recorded it (ImageReader::keyedChecksum)
    uint64_t total = 0;
    FetchAhead ahead(images, options.fetchAhead);
    // The I/O stage takes the checksum too, block by block right after reading each block.
    auto read = [&](const Chunk& c) {
        RestoreImage& image = images[c.image];
        auto step = [&]() -> Result<void> {
            if (c.firstOfImage) {
                ahead.start(c.image);
                HAL_TRY_ASSIGN(file, image.open());
                parents.clear();
                for (const auto& open : image.parents) {
                    HAL_TRY_ASSIGN(FramedImage parent, open());
                    parents.push_back(std::move(parent));
                }
                total = 0;
                digest.reset();
                // A dump that sealed contents recorded their keyed checksum: metadata without
                // it was changed (a restore would otherwise trust whatever BO it names).
                if (file.reader->sealed() && !image.expected)
                    return makeError(ErrorCode::Image,
                                     "%s: encrypted contents, and the metadata records no "
                                     "checksum for them (an encrypted checkpoint records one for "
                                     "every contents file: its metadata was changed)",
                                     image.name.c_str());
                if (options.hash && image.expected)
                    digest.emplace(image.expected->kind);
            }
            // A packed file's reader decodes a whole frame straight into the slot: blocks of a
            // frame each, which still fit the CPU's cache.
            size_t blockSize = std::max<size_t>(kHashBlock, file.reader->wholeReadBytes());
            if (c.length)
                HAL_TRY(forEachBlock(
                    lane.slot(c),
                    [&](std::span<std::byte> block) -> Result<void> {
                        HAL_TRY(file.reader->readExact(block));
                        if (!parents.empty()) {
                            uint64_t at =
                                total + static_cast<uint64_t>(block.data() - lane.slot(c).data());
                            HAL_TRY(readFromParents(image, parents, at, block));
                        }
                        if (digest)
                            digest->update(block);
                        ahead.at(total + static_cast<uint64_t>(block.data() - lane.slot(c).data()) +
                                 block.size());
                        return success();
                    },
                    blockSize));
            total += c.length;
            ahead.at(total);
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
            lane.fail(std::move(r.error().addContext(
                strFormat("while reading %s from %s", lane.where(c).c_str(), image.name.c_str()))));
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

} // namespace datapath
