#pragma once
/// \file
/// Moving BO contents between a GPU and image files in two overlapped stages, each on its own
/// thread: the device copy (SDMA, a CPU mapping, the mock driver), and the image I/O. The checksum
/// is taken while the bytes are fresh, by one of the two: at dump by the copy stage, right after a
/// chunk arrives (writing the image is the slower stage there); at restore by the I/O stage, block
/// by block right after each block is read. A stage of its own would read every byte from memory
/// once more and compete for a core. Chunks travel through a ring of equal slots carved out of one
/// staging area, so a lane never holds more than its staging area, whatever the size of the
/// contents, and each stage works on one chunk while the other works on the next. One lane serves
/// one GPU; lanes of several GPUs run at once, each with its share of `max-buffer-size`.
///
/// At dump the copy stage also finds the runs of zeros of each chunk while it is in the CPU's
/// cache (content/zero_runs.h: whole 4 KiB blocks at their file offsets), and the I/O stage hands
/// them to the writer as zeros (ImageWriter::writeZeros), which leaves them out of a file as
/// holes; the checksum is still that of every byte. At restore the reader fills zeros for the
/// holes without reading them, and they are copied to the device and hashed like any byte.
///
/// Every lane reports its progress at info level every few seconds (bytes done, MiB/s) and a
/// summary line at its end (bytes, seconds, MiB/s).

#include "base/result.h"
#include "content/digest.h"
#include "content/read_ahead.h"
#include "content/stream.h"
#include "formats/chunk_map.h"
#include "formats/content_cipher.h"
#include "formats/framed_image.h"
#include "formats/image_store.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace datapath {

using base::Result;
using content::ContentChecksum;
using content::ContentSink;
using content::ContentSource;
using content::fetchAhead;
using content::kReadAheadWindow;
using formats::BoChunks;
using formats::FramedImage;
using formats::ImageStore;
using formats::ImageWriter;
using formats::SealKeys;

/// The slots a lane splits its staging area into: a chunk in each stage, and two in hand.
inline constexpr uint32_t kLaneSlots = 4;

/// The size of each of `count` equal slots of a staging area of `stagingBytes`: a page multiple,
/// 0 when a page each does not fit.
uint64_t laneSlotSize(uint64_t stagingBytes, uint32_t count);

/// A stretch of device memory (a BO, or a part of one) whose bytes an image holds.
struct ContentPiece {
    ContentSource* source = nullptr; ///< dump: where the bytes come from
    ContentSink* sink = nullptr;     ///< restore: where they go
    uint64_t size = 0;
    std::string what; ///< how messages name it: "BO 3 (VRAM, 1048576 bytes)"
    /// Dump, incremental checkpoints (formats/chunk_map.h): when set, the copy stage records in it
    /// the XXH3-128 of each chunk of `chunks->chunkSize` bytes of the piece (whose key, chunk
    /// size and file the caller sets; the lane's slots must be a multiple of that chunk size).
    BoChunks* chunks = nullptr;
    /// Dump: the parent's record of the same BO. A chunk whose checksum it holds at the same
    /// index is marked "in parent" and handed to the writer as zeros: a hole in a file, so only
    /// the chunks "here" take disk space, at the offsets they have in the BO.
    const BoChunks* parent = nullptr;
    /// Dump, encrypted checkpoints (formats/content_cipher.h): the keys that turn each chunk's
    /// XXH3-128 into its keyed identity before it is recorded or compared, so a record tells
    /// nothing of the contents without the key.
    const SealKeys* identity = nullptr;
};

/// A piece's device end made when its first chunk comes and dropped after its last one, so a lane
/// holds one BO's mapping (or SDMA import) at a time. The stage that moves the piece's bytes
/// makes, uses and drops it.
class LazySource final : public ContentSource {
public:
    using Make = std::function<Result<std::unique_ptr<ContentSource>>()>;
    LazySource(uint64_t size, Make make);
    ~LazySource() override;
    Result<void> read(uint64_t offset, std::span<std::byte> out) override;

private:
    uint64_t size_;
    Make make_;
    std::unique_ptr<ContentSource> made_;
};

/// A ContentSink made on first use and dropped after its last byte (see LazySource).
class LazySink final : public ContentSink {
public:
    using Make = std::function<Result<std::unique_ptr<ContentSink>>()>;
    LazySink(uint64_t size, Make make);
    ~LazySink() override;
    Result<void> write(uint64_t offset, std::span<const std::byte> in) override;

private:
    uint64_t size_;
    Make make_;
    std::unique_ptr<ContentSink> made_;
};

/// One image file of contents, at dump: its pieces in order.
struct DumpImage {
    std::string name;
    /// Creates the image and writes its size header; the I/O stage calls it when it reaches the
    /// image, so only one image of a lane is open at a time.
    std::function<Result<std::unique_ptr<ImageWriter>>()> create;
    std::vector<ContentPiece> pieces;
    /// Out: the checksum of its contents once they are written (when the lane hashes); none
    /// when the lane failed.
    std::optional<ContentChecksum> checksum;
};

/// One image file of contents, at restore: its pieces in order.
struct RestoreImage {
    std::string name;
    /// Opens the image and reads (and checks) its size header.
    std::function<Result<FramedImage>()> open;
    std::vector<ContentPiece> pieces;
    /// The checksum the dump recorded, verified when the last byte has been hashed; none for
    /// images of writers that record none.
    std::optional<ContentChecksum> expected; /// Incremental images (formats/image_chain.h): the
                                             /// parents' images of the same contents, newest
    /// first. Each chunk of `chainChunk` bytes of the contents comes from the image `holder`
    /// names for it (0: this one, i: parents[i - 1]). Every image of the chain is read in order,
    /// each reading the chunks it holds and passing over the others (ImageReader::skip: a
    /// regular file does not read them; holes cost no I/O), and the checksum is that of the
    /// assembled contents.
    std::vector<std::function<Result<FramedImage>()>> parents;
    uint64_t chainChunk = 0;
    std::vector<uint32_t> holder;
    /// Asks storage to fetch the first `bytes` of the image's files, its own and its parents'
    /// (ImageStore::readAhead): the hint the restore lane gives a window before it opens the
    /// image (LaneOptions::fetchAhead). None: nothing is asked.
    std::function<void(uint64_t bytes)> readAhead;
};

/// Sets `image.readAhead` to ask `store` for the first bytes of `files`.
void fetchFilesAhead(RestoreImage& image, ImageStore& store, std::vector<std::string> files);

/// How a lane runs.
struct LaneOptions {
    std::string gpu;              ///< how progress lines and errors name the GPU ("GPU 0x1234")
    std::span<std::byte> staging; ///< the lane's staging area (page aligned)
    uint32_t slots = kLaneSlots;  ///< how many slots the staging area is split into (2 at least)
    bool hash = true;             ///< false: no checksum (benchmarks of the bare path)
    /// Dump: zero blocks are handed to the writer as zeros, which leaves them out as holes
    /// (option `content-holes`); false: every byte is written.
    bool holes = true;
    /// Restore: the following images are asked to be fetched (RestoreImage::readAhead) once the
    /// bytes left before them are fewer than this; 0: never.
    uint64_t fetchAhead = kReadAheadWindow;
    /// Seconds between progress lines (0: after every chunk; negative: none).
    double progressSeconds = 5;
};

/// What a lane moved, and how long it took.
struct LaneReport {
    uint64_t bytes = 0;
    double seconds = 0;
    uint64_t zeroBytes = 0;   ///< dump: of `bytes`, those handed to the writers as zeros
    uint64_t parentBytes = 0; ///< dump: of `zeroBytes`, those left out because the parent has them
};

/// Dumps `images` in order and fills in their checksums. The first error stops every stage; it
/// names the image, the piece and the byte range, and no image it was writing is left complete.
Result<LaneReport> runDumpLane(std::vector<DumpImage>& images, const LaneOptions& options);

/// Restores `images` in order. Each must end after its last piece and match the checksum the dump
/// recorded; the first error stops every stage and names the image, the piece and the byte range.
Result<LaneReport> runRestoreLane(std::vector<RestoreImage>& images, const LaneOptions& options);

/// "1073741824 bytes in 2.310 s (443.3 MiB/s)".
std::string describeThroughput(uint64_t bytes, double seconds);

} // namespace datapath
