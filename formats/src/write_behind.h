#pragma once
/// \file
/// Write-behind for the frames of a packed file (packed_image.cpp): a frame encoded into a
/// buffer of the writer's own (compressed, or sealed) is written to the file by a worker thread
/// while the lane's I/O stage encodes the next one, so compression and encryption overlap with
/// the file system's copy instead of adding to it. Where the writer can write without the page
/// cache (ImageWriter::directAlignment), whole aligned blocks are written so: the bytes of a
/// buffer after its last aligned block are carried to the front of the next buffer, and written
/// with it, or at finish(). Internal to formats/src.

#include "formats/image_store.h"

#include "scratch_buffer.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace formats {

using base::Error;
using base::Result;

/// Two buffers of `bufferSize` bytes: one filled by the caller, one written by the worker. The
/// frames are written in the order they were submitted. The worker starts at the first frame
/// that is not written at once, so a file of one frame never starts it.
class WriteBehind {
public:
    /// Nothing may be written to `out` but through this from now on, until finish().
    WriteBehind(ImageWriter& out, size_t bufferSize);
    /// Stops the worker; a frame still queued is not written (the writer is being abandoned:
    /// the file it writes is removed).
    ~WriteBehind();
    WriteBehind(const WriteBehind&) = delete;
    WriteBehind& operator=(const WriteBehind&) = delete;

    /// A buffer to encode the next frame into, once the worker has written what it held; the
    /// error a write stopped at, if one did.
    Result<std::span<std::byte>> acquire();
    /// Writes the first `length` bytes of the buffer acquire() gave, after the frames before
    /// it: on the worker, or, with `now`, before returning, with every byte before it (a file's
    /// last frame: finish()).
    Result<void> submit(size_t length, bool now);
    /// True when whole blocks are written without the page cache: a frame is then best copied
    /// into a buffer of this and submitted, not written by the caller itself.
    bool direct() const { return align_ > 1; }
    /// Gives the buffer acquire() gave back unwritten.
    void release();
    /// Waits until every byte submitted is written, the bytes carried included: then the
    /// writer may be written to directly, or closed; the first write error, if any.
    Result<void> finish();

private:
    /// Bytes of a buffer, [from, to), in the order they go to the file.
    struct Span {
        int buffer;
        size_t from, to;
    };
    void work();
    Result<void> drain();
    Result<void> writeSpan(const Span& span);

    ImageWriter& out_;
    ScratchBuffer buffers_[2] = {ScratchBuffer(kScratchAlign), ScratchBuffer(kScratchAlign)};
    size_t bufferSize_;
    /// The alignment of the writes that skip the page cache; 1 when there are none. A buffer's
    /// offset x holds the file's bytes at an offset congruent to x modulo it.
    size_t align_;
    uint64_t end_;                ///< the file's length once everything submitted is written
    int current_ = -1;            ///< the buffer the caller holds
    size_t from_ = 0, head_ = 0;  ///< in it: the first byte to write, where the caller's start
    std::optional<Span> carried_; ///< written with the next buffer, or at finish()
    int parked_ = -1;             ///< a buffer that holds nothing but carried_
    std::thread worker_;
    // Under mu_: buffers free to fill, spans queued, one being written, the first error, stop.
    std::mutex mu_;
    std::condition_variable changed_;
    std::vector<int> free_;
    std::deque<Span> queued_;
    bool writing_ = false;
    std::optional<Error> error_;
    bool stop_ = false;
};

} // namespace formats
