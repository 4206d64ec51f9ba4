#pragma once
/// \file
/// Where checkpoint images go: criu's image directory (an fd from criu_get_image_dir(), so `-W`
/// is honoured), or criu's image streamer. Backends only see ImageStore, ImageWriter, ImageReader.

#include "base/result.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace formats {

using base::Result;

class ContentKeys;
/// A ContentKeys with no options (formats/content_keys.h).
std::shared_ptr<ContentKeys> makeContentKeys();

/// A sequential writer of one image file. close() must be called to complete it; a writer
/// destroyed without close() leaves no complete image (the file is removed where possible).
class ImageWriter {
public:
    virtual ~ImageWriter() = default;
    /// Writes all of `data` (retrying short writes).
    virtual Result<void> write(std::span<const std::byte> data) = 0;
    /// Appends `length` zero bytes. A writer of a file in a directory leaves the whole file
    /// blocks (content/zero_runs.h) among them out as holes, which read back as zeros, and the file
    /// still has its full length once closed; other writers (criu's image streamer, which cannot
    /// seek) write the zeros.
    virtual Result<void> writeZeros(uint64_t length);
    /// Flushes and closes; the image is complete only after this succeeds.
    virtual Result<void> close() = 0;
    /// Bytes written so far.
    virtual uint64_t written() const = 0;
    /// The alignment writeDirect() needs of an address, a length and the file's offset for its
    /// bytes to go to the disk without the page cache (O_DIRECT); 0 when this writer has no such
    /// path (a pipe, a file system that refuses it, `direct-write` off).
    virtual size_t directAlignment() const { return 0; }
    /// Writes all of `data` like write(), without the page cache when the address, the length
    /// and the file's offset are multiples of directAlignment(): the CPU does not copy the bytes
    /// into the page cache, and the GPU memory of a large dump does not fill the machine's memory
    /// nor count against criu's cgroup. Through the page cache otherwise, or when the file system
    /// refuses the first such write (directAlignment() is 0 from then on).
    virtual Result<void> writeDirect(std::span<const std::byte> data) { return write(data); }
    /// The checksum a dump records for `plain`, the XXH3-64 of what this writer was given: itself,
    /// or a keyed form of it for encrypted contents (formats/content_cipher.h), which tells
    /// nothing of them without the key.
    virtual uint64_t keyedChecksum(uint64_t plain) const { return plain; }
};

/// A sequential reader of one image file. A reader of a file in a directory learns the file's
/// holes (content/file_holes.h): it fills zeros for them instead of reading them, and asks no
/// read-ahead for them.
class ImageReader {
public:
    virtual ~ImageReader() = default;
    /// Reads exactly `out.size()` bytes; an early end of file is an Image error.
    virtual Result<void> readExact(std::span<std::byte> out) = 0;
    /// Passes over the next `length` bytes: a regular file moves its offset without reading
    /// them, other readers read and drop them. Running past the end is an Image error, as a read
    /// would be.
    virtual Result<void> skip(uint64_t length);
    /// Total size when known (regular files), else -1.
    virtual int64_t size() const = 0;
    /// The image's name, for messages.
    virtual const std::string& name() const = 0;
    /// Tries to read one byte past what was consumed: true when the image ends here. How a
    /// reader proves that every byte of an image was accounted for when its size is unknown (a
    /// stream); a byte found is consumed.
    virtual Result<bool> atEnd();
    /// What a dump recorded for contents whose XXH3-64 is `plain` (ImageWriter::keyedChecksum).
    virtual uint64_t keyedChecksum(uint64_t plain) const { return plain; }
    /// True for encrypted contents (formats/content_cipher.h): a dump that sealed them recorded
    /// their keyed checksum, so a restore requires one (issue 52).
    virtual bool sealed() const { return false; }
    /// The reads this reader serves best: one of this many bytes, at a multiple of it from the
    /// start of the contents, is decoded straight into the caller's buffer (a packed file's
    /// frame); 0 when any size does as well.
    virtual size_t wholeReadBytes() const { return 0; }

    /// A descriptor of the same file opened past the page cache (O_DIRECT), where the store
    /// opened one for a packed file (formats/src/direct_stream.h), with where this reader is and
    /// the file's size; -1 where there is none. The caller owns it. Such a reader asks the
    /// kernel for no read-ahead of its own until resumeReadAhead(): the caller reads the file.
    struct Direct {
        int fd = -1;
        uint64_t offset = 0;
        uint64_t size = 0;
    };
    virtual Direct takeDirect() { return {}; }
    /// This reader reads the rest itself again, and asks the kernel to fetch ahead of it.
    virtual void resumeReadAhead() {}
};

/// A place images are written to and read from, by file name.
class ImageStore {
public:
    virtual ~ImageStore() = default;
    virtual Result<std::unique_ptr<ImageWriter>> openWrite(const std::string& name) = 0;
    virtual Result<std::unique_ptr<ImageReader>> openRead(const std::string& name) = 0;
    /// True when an image of this name exists. A streamer store asks the streamer, which serves
    /// each image once: the image is read then and kept for the next openRead (see
    /// makeStreamerStore).
    virtual bool exists(const std::string& name) = 0;
    /// True when an image can be opened for reading more than once (a directory); false for a
    /// streamer, whose images can be read once, in full, by one reader at a time.
    virtual bool rereadable() const { return true; }
    /// A hint that the first `bytes` of image `name` are read soon: a directory asks the kernel
    /// to fetch them now (content/read_ahead.h), so that storage reading one image already has
    /// the next one's first bytes queued; other stores do nothing. Never fails: an image that
    /// cannot be opened is reported by the openRead that follows.
    virtual void readAhead(const std::string& name, uint64_t bytes) {
        (void)name;
        (void)bytes;
    }
    /// A description for messages ("directory /tmp/ck", "image streamer").
    virtual std::string describe() const = 0;
    /// The names of the regular files in directory `dir`, a name relative to the store's
    /// directory ("../ck1", "parent"), sorted; image names may be such relative paths too
    /// ("../ck1/amdgpu-chunks-5.img"). Names resolve from the directory's fd, so they hold inside
    /// a restored task whose root is a container's, and as hostile input (formats/image_open.h:
    /// never absolute, never out of the directory's parent, no image file a link, a FIFO or a
    /// device). NotFound when `dir` is not a directory; NotSupported for a store without
    /// directories (the streamer).
    virtual Result<std::vector<std::string>> listDirectory(const std::string& dir);
    /// The keys of encrypted contents read from and written to this store
    /// (formats/content_keys.h).
    ContentKeys& contentKeys() { return *contentKeys_; }
    /// Whether the writers this store opens may write without the page cache
    /// (ImageWriter::writeDirect): the `direct-write` option; on unless set off.
    /// Atomic: every lane of a parallel restore applies its device's options to the one store.
    /// Held as contentKeys_ is, so that a store stays movable.
    void setDirectWrites(bool on) { directWrites_->store(on, std::memory_order_relaxed); }
    bool directWrites() const { return directWrites_->load(std::memory_order_relaxed); }

private:
    std::shared_ptr<ContentKeys> contentKeys_ = makeContentKeys();
    std::shared_ptr<std::atomic<bool>> directWrites_ = std::make_shared<std::atomic<bool>>(true);
};

/// Images in a directory given by an open directory fd (dup'ed; the caller keeps its fd).
Result<std::unique_ptr<ImageStore>> openDirectoryStore(int dirFd, const std::string& description);
/// Images written only as new files into the directory `dirFd` (dup'ed): openWrite creates each
/// with O_CREAT|O_EXCL|O_NOFOLLOW relative to that fd and refuses a name that exists, whatever
/// it is (image flatten's output).
Result<std::unique_ptr<ImageStore>> openNewFilesStore(int dirFd, const std::string& description);
/// Images in a directory whose fd belongs to someone else and may move: `dirFd` is asked for the
/// fd at every operation and the store never keeps, duplicates or closes it. This is how the
/// plugin uses criu's image directory: criu relocates its service fds in every restored task, and
/// an fd the plugin kept there would leak into the restored process.
std::unique_ptr<ImageStore> makeBorrowedDirectoryStore(std::function<int()> dirFd,
                                                       std::string description);

/// Images in a directory given by path (tools and tests).
Result<std::unique_ptr<ImageStore>> openDirectoryStore(const std::string& path);

/// Opens one image of criu's image streamer: returns an fd (a pipe), -ENOENT when the streamer
/// has no such image, or another negative errno.
using StreamerOpenFn = std::function<int(const std::string& name, bool forWrite)>;
/// Most bytes exists() reads ahead from the streamer and keeps (protobuf images are far smaller;
/// a larger image is kept open, unread beyond this, for the next openRead).
inline constexpr uint64_t kMaxStreamerPeekBytes = 16ull << 20;
/// Images through criu's image streamer (img_streamer_open). The streamer serves each image once
/// and synchronously, one at a time (criu-image-streamer drains the whole file into the pipe
/// before it reads the next request): exists() therefore opens the image and reads it into memory
/// at once, answering false only when the streamer says the image does not exist; the bytes are
/// kept, so images peeked this way can be read again (by every task forked after the peek).
/// criu streams either a dump (it only writes images, and asking the streamer for an image to
/// read makes it abort) or a restore (it only reads them).
enum class StreamDirection { Dump, Restore };
/// In a dump, exists() answers false and openRead is an error, without asking the streamer.
std::unique_ptr<ImageStore> makeStreamerStore(StreamerOpenFn open, StreamDirection direction);

} // namespace formats
