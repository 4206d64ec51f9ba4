#pragma once
/// \file
/// Where checkpoint images go: criu's image directory (an fd from criu_get_image_dir(), so `-W`
/// is honoured), or criu's image streamer. Backends only see ImageStore, ImageWriter, ImageReader.

#include "hal/result.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace hal {

/// A sequential writer of one image file. close() must be called to complete it; a writer
/// destroyed without close() leaves no complete image (the file is removed where possible).
class ImageWriter {
public:
    virtual ~ImageWriter() = default;
    /// Writes all of `data` (retrying short writes).
    virtual Result<void> write(std::span<const std::byte> data) = 0;
    /// Flushes and closes; the image is complete only after this succeeds.
    virtual Result<void> close() = 0;
    /// Bytes written so far.
    virtual uint64_t written() const = 0;
};

/// A sequential reader of one image file.
class ImageReader {
public:
    virtual ~ImageReader() = default;
    /// Reads exactly `out.size()` bytes; an early end of file is an Image error.
    virtual Result<void> readExact(std::span<std::byte> out) = 0;
    /// Total size when known (regular files), else -1.
    virtual int64_t size() const = 0;
    /// The image's name, for messages.
    virtual const std::string& name() const = 0;
};

/// A place images are written to and read from, by file name.
class ImageStore {
public:
    virtual ~ImageStore() = default;
    virtual Result<std::unique_ptr<ImageWriter>> openWrite(const std::string& name) = 0;
    virtual Result<std::unique_ptr<ImageReader>> openRead(const std::string& name) = 0;
    /// True when an image of this name exists (for a streamer: can be opened).
    virtual bool exists(const std::string& name) = 0;
    /// A description for messages ("directory /tmp/ck", "image streamer").
    virtual std::string describe() const = 0;
};

/// Images in a directory given by an open directory fd (dup'ed; the caller keeps its fd).
Result<std::unique_ptr<ImageStore>> openDirectoryStore(int dirFd, const std::string& description);
/// Images in a directory whose fd belongs to someone else and may move: `dirFd` is asked for the
/// fd at every operation and the store never keeps, duplicates or closes it. This is how the
/// plugin uses criu's image directory: criu relocates its service fds in every restored task, and
/// an fd the plugin kept there would leak into the restored process.
std::unique_ptr<ImageStore> makeBorrowedDirectoryStore(std::function<int()> dirFd,
                                                       std::string description);

/// Images in a directory given by path (tools and tests).
Result<std::unique_ptr<ImageStore>> openDirectoryStore(const std::string& path);

/// Opens one image of criu's image streamer: returns an fd, or a negative errno.
using StreamerOpenFn = std::function<int(const std::string& name, bool forWrite)>;
/// Images through criu's image streamer (img_streamer_open).
std::unique_ptr<ImageStore> makeStreamerStore(StreamerOpenFn open);

} // namespace hal
