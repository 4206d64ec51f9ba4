#pragma once
/// \file
/// A packed file read past the page cache (packed_image.cpp). On a fast disk the page cache is
/// what a restore waits on: the kernel allocates, fills and later reclaims a page for every 4 KiB,
/// copies each into the reader's buffer, and sends the disk requests of at most 254 pages. This
/// reads the file with O_DIRECT in aligned blocks of 2 MiB into buffers that are each one huge
/// page, so that every read reaches the disk as one request, two of them in flight, a few blocks
/// ahead of the caller. It is an optimisation only: when it cannot serve a read (the file came
/// short, a read failed), the caller reads the same bytes through its ordinary reader, which
/// says what is wrong, if anything is. Internal to formats/src.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace formats {

class DirectStream {
public:
    static constexpr size_t kBlock = 2u << 20; ///< what each read asks for, at a multiple of it
    static constexpr size_t kRing = 8;         ///< blocks read ahead at most
    static constexpr size_t kReaders = 2;      ///< reads in flight

    /// Serves the bytes of the file `fd` (opened with O_DIRECT; owned) from `start` to `size`.
    DirectStream(int fd, uint64_t start, uint64_t size);
    /// Stops the readers; what they read ahead is dropped.
    ~DirectStream();
    DirectStream(const DirectStream&) = delete;
    DirectStream& operator=(const DirectStream&) = delete;

    /// False when it could not start (an empty file, no memory for its blocks): then nothing
    /// is served.
    bool started() const { return !readers_.empty(); }
    /// The next `out.size()` bytes. False when it cannot serve them (a read failed or the file
    /// ended sooner): then `out` holds nothing certain and the stream serves nothing more.
    bool read(std::span<std::byte> out);

private:
    static constexpr uint64_t kFree = ~uint64_t{0};
    struct Block {
        std::byte* data = nullptr;
        uint64_t index = kFree; ///< the block of the file it holds or is reading; kFree: none
        bool ready = false;     ///< read, or failed
        bool failed = false;    ///< its read failed or came short
        size_t valid = 0;       ///< bytes read into it
    };
    void readAhead();

    int fd_;
    uint64_t pos_;        ///< the next byte served
    uint64_t size_;       ///< the file's, when opened
    size_t ringSize_ = 0; ///< blocks of the ring in use: no more than the file has
    Block ring_[kRing];
    std::vector<std::thread> readers_;
    bool broken_ = false; ///< the caller's: a read was refused, so every later one is
    // Under mu_: each block's state, the next block to read, whether a read failed (then no more
    // are made), stop.
    std::mutex mu_;
    std::condition_variable changed_;
    uint64_t next_;
    bool failed_ = false;
    bool stop_ = false;
};

} // namespace formats
