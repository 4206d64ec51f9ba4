#pragma once
/// \file
/// The machinery both directions of a content lane share (datapath/content_pipeline.h): the
/// chunks in flight, the queues between the stages, the progress lines, the slots and the plan
/// of chunks. Internal to datapath/src: the dump lane (dump_lane.cpp) and the restore lane
/// (restore_lane.cpp) include it, nothing else does.

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

namespace datapath::lane_internal {

using base::Error;
using base::ErrorCode;
using base::makeError;
using base::quietThread;
using base::Result;
using base::strFormat;
using base::success;
using content::ByteRun;
using formats::BoChunks;
using formats::chunkCount;
using formats::ChunkPlace;
using formats::ChunkRecord;
using formats::ChunkSum;
using formats::ImageWriter;

inline constexpr uint64_t kPage = 4096;
/// What the restore's I/O stage reads and hashes at a time: small enough to stay in the CPU's
/// cache between the two, so the checksum does not read the bytes from memory again.
inline constexpr uint64_t kHashBlock = 256 * 1024;

/// Calls `each` on `slot` in blocks of `block` bytes, stopping at the first error.
template <typename Each>
Result<void> forEachBlock(std::span<std::byte> slot, Each&& each, size_t block = kHashBlock) {
    for (size_t at = 0; at < slot.size(); at += block)
        HAL_TRY(each(slot.subspan(at, std::min<size_t>(block, slot.size() - at))));
    return success();
}

/// Writes `chunk` to `writer`: its zero runs as zeros, the bytes between them as bytes.
inline Result<void> writeChunk(ImageWriter& writer, std::span<const std::byte> chunk,
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
inline void mergeRuns(std::vector<ByteRun>& runs, const std::vector<ByteRun>& more) {
    if (more.empty())
        return;
    runs.insert(runs.end(), more.begin(), more.end());
    std::sort(runs.begin(), runs.end(),
              [](const ByteRun& a, const ByteRun& b) { return a.offset < b.offset; });
    std::vector<ByteRun> joined;
    for (const ByteRun& r : runs) {
        if (!joined.empty() && r.offset <= joined.back().offset + joined.back().length)
            joined.back().length =
                std::max(joined.back().offset + joined.back().length, r.offset + r.length) -
                joined.back().offset;
        else
            joined.push_back(r);
    }
    runs = std::move(joined);
}

/// Records the sums of the incremental chunks of the slot holding bytes [offset, offset +
/// slot.size()) of `piece` (`sums`, taken beside the lane's other pass over the slot), and appends
/// to `skip` (slot offsets) those the parent has.
inline Result<uint64_t> recordIncrementChunks(ContentPiece& piece, uint64_t offset,
                                              std::span<const std::byte> slot,
                                              const std::vector<ChunkSum>& sums,
                                              std::vector<ByteRun>& skip) {
    BoChunks& bo = *piece.chunks;
    if (offset % bo.chunkSize != 0)
        return makeError(
            ErrorCode::Internal,
            "%s: a lane chunk at %llu is not aligned to the incremental chunk of %llu bytes",
            piece.what.c_str(), static_cast<unsigned long long>(offset),
            static_cast<unsigned long long>(bo.chunkSize));
    if (sums.size() != chunkCount(slot.size(), bo.chunkSize))
        return makeError(ErrorCode::Internal, "%s: %zu chunk sums for %zu bytes in chunks of %llu",
                         piece.what.c_str(), sums.size(), slot.size(),
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
        record.sum = sums[static_cast<size_t>(at / bo.chunkSize)];
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

inline uint64_t bytesIn(const std::vector<ByteRun>& runs) {
    uint64_t n = 0;
    for (const ByteRun& run : runs)
        n += run.length;
    return n;
}

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
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
          total_(total), start_(Clock::now()), last_(start_) {}

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
                     total_ ? 100.0 * static_cast<double>(bytesDone_) / static_cast<double>(total_)
                            : 100.0,
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

} // namespace datapath::lane_internal
