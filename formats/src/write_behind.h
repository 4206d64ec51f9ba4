#pragma once
/// \file
/// Write-behind for the frames of a packed file (packed_image.cpp): a frame encoded into a
/// buffer of the writer's own (compressed, or sealed) is written to the file by a worker thread
/// while the lane's I/O stage encodes the next one, so compression and encryption overlap with
/// the file system's copy instead of adding to it. Internal to formats/src.

#include "formats/image_store.h"

#include "scratch_buffer.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace hal {

/// Two buffers of `bufferSize` bytes: one filled by the caller, one written by the worker. The
/// frames are written in the order they were submitted. The worker starts at the first frame
/// that is not written at once, so a file of one frame never starts it.
class WriteBehind {
public:
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
    /// it: on the worker, or, with `now`, before returning (a file's last frame).
    Result<void> submit(size_t length, bool now);
    /// Gives the buffer acquire() gave back unwritten.
    void release();
    /// Waits until every frame submitted is written; the first write error, if any.
    Result<void> drain();

private:
    void work();

    ImageWriter& out_;
    ScratchBuffer buffers_[2];
    size_t bufferSize_;
    int current_ = -1; ///< the buffer the caller holds
    std::thread worker_;
    // Under mu_: buffers free to fill, frames queued (buffer, length), one being written, the
    // first error, stop.
    std::mutex mu_;
    std::condition_variable changed_;
    std::vector<int> free_;
    std::deque<std::pair<int, size_t>> queued_;
    bool writing_ = false;
    std::optional<Error> error_;
    bool stop_ = false;
};

} // namespace hal
