// The dump lane (runDumpLane): BO contents copied from the GPU into the slots, checksummed,
// compared with the parent's chunks and written to the images, the stages overlapped.
#include "datapath/content_pipeline.h"

#include "lane_machinery.h"

namespace datapath {

using base::Result;
using base::strFormat;
using base::success;
using content::ByteRun;
using content::ContentDigest;
using content::DigestKind;
using content::ZeroRunFinder;
using formats::ChunkSums;
using formats::ImageWriter;
using formats::kImageHeaderBytes;

using namespace lane_internal;

Result<LaneReport> runDumpLane(std::vector<DumpImage>& images, const LaneOptions& options) {
    Lane<DumpImage> lane(images, options);
    std::unique_ptr<ImageWriter> writer; // the I/O stage's open image
    std::optional<ContentDigest> digest; // the copy stage's checksum of its image
    uint64_t imageBytes = 0;             // the copy stage's bytes of its image so far
    // The zero runs of the chunk in each slot: found by the copy stage, written by the I/O stage.
    std::vector<std::vector<ByteRun>> zeroRuns(options.slots);
    std::vector<uint64_t> parentRuns(options.slots); // of them, bytes the parent has
    uint64_t zeroBytes = 0;                          // the I/O stage's
    uint64_t parentBytes = 0;                        // the I/O stage's
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
            // The incremental chunks' sums too, each block while it is in the CPU's cache.
            std::optional<ChunkSums> chunkSums;
            if (piece.chunks)
                chunkSums.emplace(piece.chunks->chunkSize);
            if (digest || zeros || chunkSums)
                (void)forEachBlock(lane.slot(c), [&](std::span<std::byte> block) -> Result<void> {
                    if (digest)
                        digest->update(block);
                    if (zeros)
                        zeros->feed(block);
                    if (chunkSums)
                        chunkSums->feed(block);
                    return success();
                });
            if (zeros)
                zeros->finish();
            parentRuns[static_cast<size_t>(c.slot)] = 0;
            if (piece.chunks) {
                std::vector<ByteRun> skip;
                auto skipped =
                    recordIncrementChunks(piece, c.offset, lane.slot(c), chunkSums->finish(), skip);
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

} // namespace datapath
