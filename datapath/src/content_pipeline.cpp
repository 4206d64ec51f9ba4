#include "datapath/content_pipeline.h"

#include "base/log.h"
#include "base/quiet_thread.h"
#include "content/zero_runs.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace hal {
namespace {

constexpr uint64_t kPage = 4096;
/// What the restore's I/O stage reads and hashes at a time: small enough to stay in the CPU's
/// cache between the two, so the checksum does not read the bytes from memory again.
constexpr uint64_t kHashBlock = 256 * 1024;

/// Calls `each` on `slot` in blocks of kHashBlock, stopping at the first error.
template <typename Each> Result<void> forEachBlock(std::span<std::byte> slot, Each&& each) {
    for (size_t at = 0; at < slot.size(); at += kHashBlock)
        HAL_TRY(each(slot.subspan(at, std::min<size_t>(kHashBlock, slot.size() - at))));
    return success();
}

/// Writes `chunk` to `writer`: its zero runs as zeros, the bytes between them as bytes.
Result<void> writeChunk(ImageWriter& writer, std::span<const std::byte> chunk,
                        const std::vector<ByteRun>& zeroRuns) {
    uint64_t at = 0;
    for (const ByteRun& run : zeroRuns) {
        if (run.offset > at)
            HAL_TRY(writer.write(chunk.subspan(at, run.offset - at)));
        HAL_TRY(writer.writeZeros(run.length));
        at = run.offset + run.length;
    }
    if (at < chunk.size())
        HAL_TRY(writer.write(chunk.subspan(at)));
    return success();
}

/// `runs` with `more` merged in: in order, overlapping and adjacent runs joined.
void mergeRuns(std::vector<ByteRun>& runs, const std::vector<ByteRun>& more) {
    if (more.empty())
        return;
    runs.insert(runs.end(), more.begin(), more.end());
    std::sort(runs.begin(), runs.end(),
              [](const ByteRun& a, const ByteRun& b) { return a.offset < b.offset; });
    std::vector<ByteRun> joined;
    for (const ByteRun& r : runs) {
        if (!joined.empty() && r.offset <= joined.back().offset + joined.back().length)
            joined.back().length =
                std::max(joined.back().offset + joined.back().length, r.offset + r.length) - joined.back().offset;
        else
            joined.push_back(r);
    }
    runs = std::move(joined);
}

/// Records the checksum of each incremental chunk of the slot holding bytes [offset, offset +
/// slot.size()) of `piece`, and appends to `skip` (slot offsets) those the parent has.
Result<uint64_t> sumIncrementChunks(ContentPiece& piece, uint64_t offset, std::span<const std::byte> slot,
                                    std::vector<ByteRun>& skip) {
    BoChunks& bo = *piece.chunks;
    if (offset % bo.chunkSize != 0)
        return makeError(ErrorCode::Internal, "%s: a lane chunk at %llu is not aligned to the incremental chunk of %llu bytes",
                         piece.what.c_str(), static_cast<unsigned long long>(offset),
                         static_cast<unsigned long long>(bo.chunkSize));
    if (bo.chunks.size() != chunkCount(piece.size, bo.chunkSize))
        bo.chunks.assign(chunkCount(piece.size, bo.chunkSize), ChunkRecord{});
    const BoChunks* old = piece.parent;
    bool comparable = old && old->key == bo.key && old->chunkSize == bo.chunkSize &&
                      old->chunks.size() == bo.chunks.size();
    uint64_t skipped = 0;
    for (uint64_t at = 0; at < slot.size(); at += bo.chunkSize) {
        uint64_t length = std::min<uint64_t>(bo.chunkSize, slot.size() - at);
        size_t index = static_cast<size_t>((offset + at) / bo.chunkSize);
        ChunkRecord& record = bo.chunks[index];
        record.sum = chunkSumOf(slot.subspan(at, length));
        if (piece.identity)
            record.sum = piece.identity->chunkIdentity(record.sum);
        record.place = comparable && old->chunks[index].sum == record.sum ? ChunkPlace::InParent
                                                                        : ChunkPlace::Here;
        if (record.place == ChunkPlace::InParent) {
            skip.push_back({at, length});
            skipped += length;
        }
    }
    return skipped;
}

uint64_t bytesIn(const std::vector<ByteRun>& runs) {
    uint64_t n = 0;
    for (const ByteRun& run : runs)
        n += run.length;
    return n;
}

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// One chunk of one piece of one image, in a slot (none for an image without bytes).
struct Chunk {
    size_t image = 0;
    size_t piece = 0;
    uint64_t offset = 0; ///< within the piece
    uint64_t length = 0;
    int slot = -1;
    bool firstOfImage = false;
    bool lastOfImage = false;
};

/// A queue between two stages. It never holds more than the lane's slots, so it needs no bound.
class ChunkQueue {
public:
    void push(const Chunk& c) {
        {
            std::lock_guard lock(mu_);
            items_.push_back(c);
        }
        cv_.notify_one();
    }
    /// The next chunk; false once the queue is closed and drained, or the lane stops.
    bool pop(Chunk* out) {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopped_ || closed_ || !items_.empty(); });
        if (stopped_ || items_.empty())
            return false;
        *out = items_.front();
        items_.pop_front();
        return true;
    }
    /// No more chunks will come.
    void close() {
        {
            std::lock_guard lock(mu_);
            closed_ = true;
        }
        cv_.notify_all();
    }
    /// The lane stops: every pop returns false at once.
    void stop() {
        {
            std::lock_guard lock(mu_);
            stopped_ = true;
        }
        cv_.notify_all();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<Chunk> items_;
    bool closed_ = false;
    bool stopped_ = false;
};

/// Progress lines of one lane: every `interval` seconds, and a summary at the end.
class Progress {
public:
    Progress(const LaneOptions& options, const char* doing, const char* done, uint64_t total)
        : gpu_(options.gpu), doing_(doing), doneVerb_(done), interval_(options.progressSeconds),
          total_(total),
          start_(Clock::now()), last_(start_) {}

    void add(uint64_t bytes) {
        bytesDone_ += bytes;
        if (interval_ < 0 || bytesDone_ == total_)
            return;
        auto now = Clock::now();
        if (std::chrono::duration<double>(now - last_).count() < interval_)
            return;
        last_ = now;
        double s = secondsSince(start_);
        HAL_LOG_INFO("%s: %s BO contents: %llu of %llu MiB (%.0f%%), %.1f MiB/s", gpu_.c_str(),
                     doing_, static_cast<unsigned long long>(bytesDone_ >> 20),
                     static_cast<unsigned long long>(total_ >> 20),
                     total_ ? 100.0 * static_cast<double>(bytesDone_) / static_cast<double>(total_) : 100.0,
                     s > 0 ? static_cast<double>(bytesDone_) / s / (1 << 20) : 0.0);
    }

    LaneReport finish() const {
        LaneReport r{bytesDone_, secondsSince(start_)};
        if (r.bytes)
            HAL_LOG_INFO("%s: BO contents %s: %s", gpu_.c_str(), doneVerb_,
                         describeThroughput(r.bytes, r.seconds).c_str());
        return r;
    }

private:
    std::string gpu_;
    const char* doing_;
    const char* doneVerb_;
    double interval_;
    uint64_t total_;
    uint64_t bytesDone_ = 0;
    Clock::time_point start_;
    Clock::time_point last_;
};

/// The machinery both directions share: slots, the queues, the first error, the plan of chunks.
/// `Image` is DumpImage or RestoreImage.
template <typename Image> class Lane {
public:
    Lane(std::vector<Image>& images, const LaneOptions& options)
        : images_(images), options_(options) {
        slotSize_ = laneSlotSize(options.staging.size(), options.slots);
        for (uint32_t i = 0; i < options.slots; ++i)
            free_.push(Chunk{0, 0, 0, 0, static_cast<int>(i)});
    }

    Result<void> checkStaging() const {
        if (options_.slots < 2 || slotSize_ == 0 ||
            reinterpret_cast<uintptr_t>(options_.staging.data()) % kPage)
            return makeError(ErrorCode::Internal,
                             "%s: a staging area of %zu bytes cannot hold %u page-aligned slots",
                             options_.gpu.c_str(), options_.staging.size(), options_.slots);
        return success();
    }

    uint64_t totalBytes() const {
        uint64_t total = 0;
        for (const Image& image : images_)
            for (const ContentPiece& p : image.pieces)
                total += p.size;
        return total;
    }

    std::span<std::byte> slot(const Chunk& c) {
        return options_.staging.subspan(static_cast<size_t>(c.slot) * slotSize_, c.length);
    }

    /// Stage one: walks the plan, each chunk in a free slot, and hands it on after `work`.
    template <typename Work> void produce(ChunkQueue& out, Work&& work) {
        for (size_t i = 0; i < images_.size(); ++i) {
            const auto& pieces = images_[i].pieces;
            bool empty = true;
            for (const ContentPiece& p : pieces)
                empty = empty && p.size == 0;
            if (empty) {
                Chunk c{i, 0, 0, 0, -1, true, true};
                if (!work(c))
                    return;
                out.push(c);
                continue;
            }
            bool first = true;
            for (size_t p = 0; p < pieces.size(); ++p) {
                for (uint64_t off = 0; off < pieces[p].size; off += slotSize_) {
                    Chunk c;
                    if (!free_.pop(&c))
                        return;
                    c.image = i;
                    c.piece = p;
                    c.offset = off;
                    c.length = std::min(slotSize_, pieces[p].size - off);
                    c.firstOfImage = first;
                    first = false;
                    c.lastOfImage = off + c.length == pieces[p].size && lastWithBytes(pieces, p);
                    if (!work(c))
                        return;
                    out.push(c);
                }
            }
        }
        out.close();
    }

    /// Stage two: `work` on each chunk, then its slot is free again.
    template <typename Work> void consume(ChunkQueue& in, Progress& progress, Work&& work) {
        Chunk c;
        while (in.pop(&c)) {
            if (!work(c))
                return;
            progress.add(c.length);
            if (c.slot >= 0)
                free_.push(c);
        }
    }

    /// Records the first error and stops every stage.
    void fail(Error error) {
        {
            std::lock_guard lock(mu_);
            if (!error_)
                error_ = std::move(error);
        }
        free_.stop();
        for (ChunkQueue* q : stages_)
            q->stop();
    }

    /// Runs the two stages (the second on this thread) and waits for both.
    template <typename A, typename C>
    Result<LaneReport> run(const char* doing, const char* done, A&& first, C&& last) {
        HAL_TRY(checkStaging());
        // Every queue is known before the first thread starts: fail() walks stages_ from any
        // stage's thread.
        ChunkQueue between;
        stages_ = {&between};
        Progress progress(options_, doing, done, totalBytes());
        std::thread a = quietThread([&] { produce(between, first); });
        consume(between, progress, last);
        a.join();
        if (error_)
            return std::move(*error_);
        return progress.finish();
    }

    std::string where(const Chunk& c) const {
        if (!c.length)
            return "the size header of contents of " + options_.gpu;
        const ContentPiece& p = images_[c.image].pieces[c.piece];
        return strFormat("bytes %llu..%llu of %s of %s", static_cast<unsigned long long>(c.offset),
                         static_cast<unsigned long long>(c.offset + c.length), p.what.c_str(),
                         options_.gpu.c_str());
    }

    std::vector<Image>& images_;
    const LaneOptions& options_;

private:
    static bool lastWithBytes(const std::vector<ContentPiece>& pieces, size_t p) {
        for (size_t q = p + 1; q < pieces.size(); ++q)
            if (pieces[q].size)
                return false;
        return true;
    }

    uint64_t slotSize_ = 0;
    ChunkQueue free_;
    std::vector<ChunkQueue*> stages_;
    std::mutex mu_;
    std::optional<Error> error_;
};

} // namespace

LazySource::LazySource(uint64_t size, Make make) : size_(size), make_(std::move(make)) {}
LazySource::~LazySource() = default;

Result<void> LazySource::read(uint64_t offset, std::span<std::byte> out) {
    if (!made_) {
        HAL_TRY_ASSIGN(made_, make_());
    }
    HAL_TRY(made_->read(offset, out));
    if (offset + out.size() >= size_)
        made_.reset();
    return success();
}

LazySink::LazySink(uint64_t size, Make make) : size_(size), make_(std::move(make)) {}
LazySink::~LazySink() = default;

Result<void> LazySink::write(uint64_t offset, std::span<const std::byte> in) {
    if (!made_) {
        HAL_TRY_ASSIGN(made_, make_());
    }
    HAL_TRY(made_->write(offset, in));
    if (offset + in.size() >= size_)
        made_.reset();
    return success();
}

uint64_t laneSlotSize(uint64_t stagingBytes, uint32_t count) {
    if (count == 0)
        return 0;
    return stagingBytes / count / kPage * kPage;
}

std::string describeThroughput(uint64_t bytes, double seconds) {
    return strFormat("%llu bytes in %.3f s (%.1f MiB/s)", static_cast<unsigned long long>(bytes),
                     seconds, seconds > 0 ? static_cast<double>(bytes) / seconds / (1 << 20) : 0.0);
}

Result<LaneReport> runDumpLane(std::vector<DumpImage>& images, const LaneOptions& options) {
    Lane<DumpImage> lane(images, options);
    std::unique_ptr<ImageWriter> writer; // the I/O stage's open image
    std::optional<ContentDigest> digest; // the copy stage's checksum of its image
    uint64_t imageBytes = 0;             // the copy stage's bytes of its image so far
    // The zero runs of the chunk in each slot: found by the copy stage, written by the I/O stage.
    std::vector<std::vector<ByteRun>> zeroRuns(options.slots);
    std::vector<uint64_t> parentRuns(options.slots); // of them, bytes the parent has
    uint64_t zeroBytes = 0; // the I/O stage's
    uint64_t parentBytes = 0; // the I/O stage's
    // The copy stage takes the checksum and finds the zero runs, 256 KiB at a time right after
    // each chunk arrives in its slot: writing is the slower stage (the file system allocates and
    // copies), so both go beside the copy, and a CPU copy (the mock's, a CPU mapping's) leaves
    // the chunk in the CPU's cache.
    auto copy = [&](const Chunk& c) {
        DumpImage& image = images[c.image];
        if (c.firstOfImage) {
            digest.reset();
            if (options.hash)
                digest.emplace(DigestKind::Xxh3_64);
            imageBytes = 0;
        }
        if (c.length) {
            ContentPiece& piece = image.pieces[c.piece];
            auto r = piece.source->read(c.offset, lane.slot(c));
            if (!r.ok()) {
                lane.fail(std::move(r.error().addContext(strFormat(
                    "while copying %s into %s", lane.where(c).c_str(), image.name.c_str()))));
                return false;
            }
            std::vector<ByteRun>& runs = zeroRuns[static_cast<size_t>(c.slot)];
            runs.clear();
            // Holes are aligned to the file, whose contents follow the size header.
            std::optional<ZeroRunFinder> zeros;
            if (options.holes)
                zeros.emplace(kImageHeaderBytes + imageBytes, runs);
            if (digest || zeros)
                (void)forEachBlock(lane.slot(c), [&](std::span<std::byte> block) -> Result<void> {
                    if (digest)
                        digest->update(block);
                    if (zeros)
                        zeros->feed(block);
                    return success();
                });
            if (zeros)
                zeros->finish();
            parentRuns[static_cast<size_t>(c.slot)] = 0;
            if (piece.chunks) {
                std::vector<ByteRun> skip;
                auto skipped = sumIncrementChunks(piece, c.offset, lane.slot(c), skip);
                if (!skipped.ok()) {
                    lane.fail(std::move(skipped).error());
                    return false;
                }
                mergeRuns(runs, skip);
                parentRuns[static_cast<size_t>(c.slot)] = skipped.value();
            }
            imageBytes += c.length;
        }
        // The I/O stage does not touch the checksum; it is read once both stages have ended,
        // and dropped when the lane failed.
        if (c.lastOfImage && digest)
            image.checksum = digest->checksum();
        return true;
    };
    auto write = [&](const Chunk& c) {
        DumpImage& image = images[c.image];
        auto step = [&]() -> Result<void> {
            if (c.firstOfImage) {
                HAL_TRY_ASSIGN(writer, image.create());
            }
            if (c.length) {
                const std::vector<ByteRun>& runs = zeroRuns[static_cast<size_t>(c.slot)];
                HAL_TRY(writeChunk(*writer, lane.slot(c), runs));
                zeroBytes += bytesIn(runs);
                parentBytes += parentRuns[static_cast<size_t>(c.slot)];
            }
            if (c.lastOfImage) {
                // The copy stage set the checksum before it handed this chunk on.
                if (image.checksum)
                    image.checksum->value = writer->keyedChecksum(image.checksum->value);
                HAL_TRY(writer->close());
                writer.reset();
            }
            return success();
        };
        auto r = step();
        if (r.ok())
            return true;
        writer.reset(); // an incomplete image is removed
        lane.fail(std::move(r.error().addContext(
            strFormat("while writing %s to %s", lane.where(c).c_str(), image.name.c_str()))));
        return false;
    };
    auto report = lane.run("dumping", "dumped", copy, write);
    writer.reset();
    if (!report.ok()) {
        for (DumpImage& image : images)
            image.checksum.reset(); // the copy stage may have hashed what was never written
        return report;
    }
    report->zeroBytes = zeroBytes;
    report->parentBytes = parentBytes;
    if (parentBytes)
        HAL_LOG_INFO("%s: %llu bytes of them unchanged since the parent image, left out",
                     options.gpu.c_str(), static_cast<unsigned long long>(parentBytes));
    if (zeroBytes)
        HAL_LOG_INFO("%s: %llu bytes of them in zero blocks, written as holes where the images "
                     "can have them",
                     options.gpu.c_str(), static_cast<unsigned long long>(zeroBytes));
    return report;
}

/// Checks that an image's chain is complete: a holder for every chunk, each naming an image.
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
                }));
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
