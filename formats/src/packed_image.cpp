#include "formats/packed_image.h"

#include "formats/chunk_map.h"
#include "formats/content_keys.h"
#include "formats/image_names.h"

#include "direct_stream.h"
#include "scratch_buffer.h"
#include "write_behind.h"

#include "base/quiet_thread.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace formats {

using base::Error;
using base::ErrorCode;
using base::makeError;
using base::quietThread;
using base::Result;
using base::strFormat;
using base::success;

namespace {

constexpr std::string_view kPackedPrefix = "amdgpu-packed-";

/// Compresses what a lane writes into frames of kPackedFrameRaw raw bytes.
/// Sealed with `aead` when the checkpoint is encrypted (formats/content_cipher.h): compression
/// first, then encryption. A whole frame the lane hands over at once is encoded from the lane's
/// bytes: a frame stored raw is written from them (its header, then its bytes), or sealed from
/// them, so the bytes of a chunk that does not compress are not copied into a frame first. A
/// frame encoded into a buffer of ours (compressed, or sealed) is written behind, while the next
/// is encoded (write_behind.h).
class PackingWriter final : public ImageWriter {
public:
    PackingWriter(std::unique_ptr<ImageWriter> out, CodecSpec spec, std::unique_ptr<Aead> aead,
                  FramePlace place)
        : out_(std::move(out)), spec_(spec), aead_(std::move(aead)), place_(std::move(place)),
          behind_(*out_, aead_ ? maxSealedFrame(maxFrameSize(kPackedFrameRaw))
                               : maxFrameSize(kPackedFrameRaw)) {}
    Result<void> write(std::span<const std::byte> data) override {
        while (!data.empty()) {
            if (raw_.empty() && data.size() >= kPackedFrameRaw) {
                HAL_TRY(emit(data.first(kPackedFrameRaw), false));
                data = data.subspan(kPackedFrameRaw);
                continue;
            }
            onlyZeros_ = false;
            if (raw_.capacity() < kPackedFrameRaw)
                raw_.reserve(kPackedFrameRaw);
            size_t n = std::min<size_t>(data.size(), kPackedFrameRaw - raw_.size());
            raw_.insert(raw_.end(), data.begin(), data.begin() + static_cast<ptrdiff_t>(n));
            data = data.subspan(n);
            HAL_TRY(flushFull());
        }
        return success();
    }
    Result<void> writeZeros(uint64_t length) override {
        while (length) {
            if (raw_.capacity() < kPackedFrameRaw)
                raw_.reserve(kPackedFrameRaw);
            size_t n =
                static_cast<size_t>(std::min<uint64_t>(length, kPackedFrameRaw - raw_.size()));
            raw_.resize(raw_.size() + n, std::byte{0});
            length -= n;
            HAL_TRY(flushFull());
        }
        return success();
    }
    Result<void> close() override {
        if (!raw_.empty())
            HAL_TRY(flush());
        HAL_TRY(behind_.finish());
        return out_->close();
    }
    uint64_t written() const override { return done_ + raw_.size(); }
    uint64_t keyedChecksum(uint64_t plain) const override {
        return aead_ ? aead_->keys().keyedChecksum(place_.file, plain) : plain;
    }

private:
    Result<void> flushFull() { return raw_.size() == kPackedFrameRaw ? flush() : success(); }
    Result<void> flush() {
        HAL_TRY(emit(raw_, onlyZeros_));
        raw_.clear();
        onlyZeros_ = true;
        return success();
    }
    /// Writes the frame of `raw`; `zeros`: it holds writeZeros' bytes only.
    Result<void> emit(std::span<const std::byte> raw, bool zeros) {
        // The file's last frame is written before this returns: nothing is left to overlap.
        bool last = frames_ + 1 >= place_.count;
        if (!aead_) {
            HAL_TRY_ASSIGN(std::span<std::byte> buffer, behind_.acquire());
            HAL_TRY_ASSIGN(FrameParts parts, encodeChunkParts(spec_, raw, buffer));
            if (parts.body.data() == raw.data() && behind_.direct()) {
                // Stored raw, to be written without the page cache: a copy of the caller's bytes
                // costs the CPU less than the page cache's copy would.
                memcpy(buffer.data() + parts.header.size(), raw.data(), raw.size());
                HAL_TRY(behind_.submit(parts.header.size() + raw.size(), last));
            } else if (parts.body.data() == raw.data()) {
                // Stored raw: the body is the caller's bytes, written now, after what is queued.
                auto r = writeNow(parts);
                behind_.release();
                HAL_TRY(r);
            } else {
                HAL_TRY(behind_.submit(parts.header.size() + parts.body.size(), last));
            }
        } else {
            // An encrypted frame of zeros only (a hole, or a chunk the parent holds) is
            // compressed whatever the option says: encrypted, it could not be a hole of the file.
            CodecSpec spec = zeros && spec_.codec == Codec::None ? CodecSpec{Codec::Lz4, 0} : spec_;
            HAL_TRY_ASSIGN(
                FrameParts parts,
                encodeChunkParts(spec, raw, frame_.atLeast(maxFrameSize(kPackedFrameRaw))));
            place_.index = frames_;
            HAL_TRY_ASSIGN(std::span<std::byte> buffer, behind_.acquire());
            auto sealed = aead_->seal(place_, parts.header, parts.body, buffer);
            if (!sealed.ok()) {
                behind_.release();
                return std::move(sealed).error();
            }
            HAL_TRY(behind_.submit(sealed->size(), last));
        }
        done_ += raw.size();
        ++frames_;
        return success();
    }
    Result<void> writeNow(const FrameParts& parts) {
        HAL_TRY(behind_.finish());
        HAL_TRY(out_->write(parts.header));
        return out_->write(parts.body);
    }

    std::unique_ptr<ImageWriter> out_;
    CodecSpec spec_;
    std::vector<std::byte> raw_; ///< the frame being filled
    ScratchBuffer frame_;        ///< the encoded frame, before it is sealed
    uint64_t done_ = 0;          ///< raw bytes in frames written
    std::unique_ptr<Aead> aead_; ///< null: not encrypted
    FramePlace place_;
    bool onlyZeros_ = true; ///< the frame being filled holds writeZeros' bytes only
    uint64_t frames_ = 0;
    WriteBehind behind_; ///< last: its worker stops before out_ goes
};

/// A frame's buffers: its sealed bytes (an encrypted file, opened in place), the frame (a file
/// in the clear), and the raw bytes of a compressed frame. Each is sized when first needed. Which
/// frame they hold and the bytes read for it, between reading and decoding.
struct FrameBuffers {
    ScratchBuffer sealed, frame, raw;
    uint64_t index = 0;
    std::span<const std::byte> read; ///< the frame's bytes as read (sealed, or not)
};

/// Reads and decodes the frames of a packed file: read() then decode() for each frame, each step
/// possibly on a thread of its own (read() in order on one, decode() on another: they share
/// nothing but the buffers handed between them). decodeAside() decodes another frame on a third
/// thread (the reader's, while it waits), at the same time as decode(), with a cipher context of
/// its own.
class FrameSource {
public:
    FrameSource(std::unique_ptr<ImageReader> in, uint64_t rawSize, std::unique_ptr<Aead> aead)
        : in_(std::move(in)), rawSize_(rawSize), aead_(std::move(aead)) {
        if (aead_) {
            auto other = aead_->another();
            if (other.ok()) // else no frame is decoded aside
                asideAead_ = std::move(other).value();
        }
        // A file of more than one frame is read past the page cache where its store opened it
        // so (direct_stream.h); a smaller one through it, with the reader's read-ahead.
        ImageReader::Direct direct = frameCount() > 1 ? in_->takeDirect() : ImageReader::Direct{};
        if (direct.fd >= 0)
            direct_ = std::make_unique<DirectStream>(direct.fd, direct.offset, direct.size);
        if (!direct_ || !direct_->started())
            stopDirect();
    }

    ImageReader& in() { return *in_; }
    const std::string& name() const { return in_->name(); }
    uint64_t rawSize() const { return rawSize_; }
    uint64_t frameCount() const { return chunkCount(rawSize_, kPackedFrameRaw); }
    const Aead* aead() const { return aead_.get(); }

    /// Reads the next frame and decodes it (see decode).
    Result<std::span<const std::byte>> next(FrameBuffers& b, std::span<std::byte> into = {}) {
        HAL_TRY(read(b));
        return decode(b, into);
    }

    /// Reads the next frame's bytes into `b`. Errors name the file, the frame and the field.
    Result<void> read(FrameBuffers& b) {
        if (read_ == frameCount())
            return makeError(ErrorCode::Image, "%s: read past its %llu bytes of contents",
                             name().c_str(), static_cast<unsigned long long>(rawSize_));
        b.index = read_;
        if (aead_) {
            HAL_TRY_ASSIGN(b.read, readSealed(b));
        } else {
            HAL_TRY_ASSIGN(b.read, readPlain(b));
        }
        ++read_;
        return success();
    }

    /// Decodes the frame read() put in `b`: opened (an encrypted file), then decompressed.
    /// Into `into` when it is given (the caller's buffer, exactly the frame's raw size: a frame
    /// stored raw is opened straight into it, a compressed one decompressed into it, so the raw
    /// bytes are not copied again), else in b's buffers (b.sealed or b.frame when stored raw,
    /// else b.raw). Returns the raw bytes.
    Result<std::span<const std::byte>> decode(FrameBuffers& b, std::span<std::byte> into = {}) {
        return decodeWith(aead_.get(), b, into);
    }

    /// Whether the frame read() put in `b` is worth decoding aside, on another thread than the
    /// one that takes it: it is sealed or compressed (a raw frame's bytes are served as read), and
    /// a second cipher context exists for a sealed one.
    bool worthDecodingAside(const FrameBuffers& b) const {
        if (aead_)
            return asideAead_ != nullptr;
        auto header = readFrameHeader(b.read);
        return header.ok() && header->codec != Codec::None;
    }

    /// decode() of `b` into its own buffers, on another thread than decode()'s.
    Result<std::span<const std::byte>> decodeAside(FrameBuffers& b) {
        return decodeWith(asideAead_.get(), b, {});
    }

private:
    Result<std::span<const std::byte>> decodeWith(Aead* aead, FrameBuffers& b,
                                                  std::span<std::byte> into) {
        std::span<const std::byte> frame = b.read;
        bool opened = false; // the raw bytes were opened into `into`: nothing left to decode
        if (aead) {
            FramePlace place{name(), rawSize_, b.index, frameCount()};
            // Opened in place, over its ciphertext, when not into the caller's buffer.
            std::span<std::byte> inner =
                b.sealed.bytes().subspan(kSealHeader, maxFrameSize(kPackedFrameRaw));
            Aead::RestPlace restTo;
            if (!into.empty())
                restTo = [&](std::span<const std::byte> head, size_t rest) {
                    auto h = readFrameHeader(head);
                    opened = h.ok() && h->codec == Codec::None && h->storedSize == rest &&
                             rest == into.size();
                    return opened ? into : std::span<std::byte>();
                };
            auto length = aead->open(place, frame, inner, into.empty() ? 0 : kFrameHeader, restTo);
            if (!length.ok())
                return failure(b.index, length.error());
            frame = inner.first(length.value());
        }
        HAL_TRY_ASSIGN(FrameHeader header, headerOf(b.index, frame));
        if (opened)
            return std::span<const std::byte>(into);
        if (!into.empty()) {
            auto decoded = decodeChunk(frame, into);
            if (!decoded.ok())
                return failure(b.index, decoded.error());
            return std::span<const std::byte>(into.first(decoded.value()));
        }
        auto decoded = decodeChunkInPlace(
            frame, header.codec != Codec::None ? b.raw.atLeast(kPackedFrameRaw) : b.raw.bytes());
        if (!decoded.ok())
            return failure(b.index, decoded.error());
        return decoded;
    }

    /// Where frame `index` starts among the contents bytes, and how many it holds.
    static uint64_t startOf(uint64_t index) { return index * kPackedFrameRaw; }
    uint64_t expected(uint64_t index) const {
        return std::min<uint64_t>(kPackedFrameRaw, rawSize_ - startOf(index));
    }
    /// `error`, an Image error, said of frame `index`.
    Error failure(uint64_t index, const Error& error) const {
        return makeError(ErrorCode::Image, "%s: %s", where(index).c_str(), error.message().c_str());
    }
    /// The header of frame `index`, at the start of `frame`, checked against the raw bytes the
    /// frame holds at its place in the file.
    Result<FrameHeader> headerOf(uint64_t index, std::span<const std::byte> frame) const {
        auto header = readFrameHeader(frame);
        if (!header.ok())
            return failure(index, header.error());
        if (header->rawSize != expected(index))
            return makeError(ErrorCode::Image,
                             "%s: holds %u raw bytes, a packed file's frame here holds %llu",
                             where(index).c_str(), header->rawSize,
                             static_cast<unsigned long long>(expected(index)));
        return header;
    }
    std::string where(uint64_t index) const {
        return strFormat("%s: frame %llu (contents bytes from %llu)", name().c_str(),
                         static_cast<unsigned long long>(index),
                         static_cast<unsigned long long>(startOf(index)));
    }

    /// Reads frame b.index, unencrypted, into b.frame.
    Result<std::span<const std::byte>> readPlain(FrameBuffers& b) {
        std::span<std::byte> buffer = b.frame.atLeast(maxFrameSize(kPackedFrameRaw));
        std::span<std::byte> head = buffer.first(kFrameHeader);
        HAL_TRY_CONTEXT(readIn(head), "reading the header of %s", where(b.index).c_str());
        HAL_TRY_ASSIGN(FrameHeader header, headerOf(b.index, head));
        HAL_TRY_CONTEXT(readIn(buffer.subspan(kFrameHeader, header.storedSize)), "reading %s",
                        where(b.index).c_str());
        return std::span<const std::byte>(buffer.first(header.frameSize()));
    }

    /// Reads sealed frame b.index into b.sealed.
    Result<std::span<const std::byte>> readSealed(FrameBuffers& b) {
        std::span<std::byte> sealed =
            b.sealed.atLeast(maxSealedFrame(maxFrameSize(kPackedFrameRaw)));
        std::span<std::byte> head = sealed.first(kSealHeader);
        HAL_TRY_CONTEXT(readIn(head), "reading the header of %s", where(b.index).c_str());
        auto header = readSealHeader(head, sealed.size() - kSealHeader);
        if (!header.ok())
            return failure(b.index, header.error());
        HAL_TRY_CONTEXT(readIn(sealed.subspan(kSealHeader, header->sealedSize)), "reading %s",
                        where(b.index).c_str());
        return std::span<const std::byte>(sealed.first(header->frameSize()));
    }

    /// The next `out.size()` bytes of the file: from the direct stream while it serves them,
    /// the reader moving past them, else from the reader, which then says what went wrong.
    Result<void> readIn(std::span<std::byte> out) {
        if (direct_) {
            if (direct_->read(out))
                return in_->skip(out.size());
            stopDirect();
        }
        return in_->readExact(out);
    }
    /// From now on the reader reads the file, and asks the kernel to fetch ahead of it.
    void stopDirect() {
        direct_.reset();
        in_->resumeReadAhead();
    }

    std::unique_ptr<ImageReader> in_;
    std::unique_ptr<DirectStream> direct_; ///< null: read through the page cache
    uint64_t rawSize_;
    std::unique_ptr<Aead> aead_;      ///< null: not encrypted
    std::unique_ptr<Aead> asideAead_; ///< decodeAside's
    uint64_t read_ = 0;               ///< frames read so far
};

/// Serves the raw bytes of a packed file. A file of more than one frame is read ahead, a few
/// frames at a time, by a worker thread, into slots the caller's thread decodes (decryption and
/// decompression) in turn: a read of a whole frame at a frame's start gets it decoded straight
/// into the caller's buffer (wholeReadBytes), without a copy, and any other read is served from
/// the slot's decoded bytes. The lane's checksum still covers the raw bytes it is served.
///
/// When the caller decodes more slowly than the file is read, the reader finds no free slot;
/// rather than wait, it decodes a frame it read that the caller has not taken yet (the newest),
/// in its slot, and the caller copies that one's bytes instead of decoding them: two cores
/// decrypt or decompress where the disk is faster than one. It does the same once it has read
/// the last frame, so the file's last frames are decoded on two cores too.
class UnpackingReader final : public ImageReader {
public:
    UnpackingReader(std::unique_ptr<ImageReader> in, uint64_t rawSize, std::unique_ptr<Aead> aead)
        : source_(std::move(in), rawSize, std::move(aead)) {
        if (source_.frameCount() < 2) {
            slots_.resize(1);
            return;
        }
        slots_.resize(kSlots);
        aside_.resize(kSlots);
        for (size_t i = kSlots; i-- > 0;)
            free_.push_back(i);
        reader_ = quietThread([this] { readAhead(); });
    }
    ~UnpackingReader() override { stopReader(); }

    Result<void> readExact(std::span<std::byte> out) override {
        while (!out.empty()) {
            if (at_ == current_.size()) {
                uint64_t whole = nextFrameBytes();
                if (whole && out.size() >= whole) {
                    HAL_TRY(takeFrame(out.first(static_cast<size_t>(whole))));
                    out = out.subspan(static_cast<size_t>(whole));
                    continue;
                }
                HAL_TRY(takeFrame({}));
            }
            size_t n = std::min(out.size(), current_.size() - at_);
            memcpy(out.data(), current_.data() + at_, n);
            at_ += n;
            out = out.subspan(n);
        }
        return success();
    }
    /// Passes over bytes without copying them (a parent's chunks a newer image holds). A whole
    /// frame passed over from its start is read but not decoded: none of its bytes are served.
    Result<void> skip(uint64_t length) override {
        while (length) {
            if (at_ == current_.size()) {
                uint64_t whole = nextFrameBytes();
                if (whole && length >= whole) {
                    HAL_TRY(takeFrame({}, false));
                    length -= whole;
                    continue;
                }
                HAL_TRY(takeFrame({}));
            }
            size_t n = static_cast<size_t>(std::min<uint64_t>(length, current_.size() - at_));
            at_ += n;
            length -= n;
        }
        return success();
    }
    size_t wholeReadBytes() const override { return kPackedFrameRaw; }
    int64_t size() const override { return -1; }
    const std::string& name() const override { return source_.name(); }
    Result<bool> atEnd() override {
        if (at_ != current_.size() || served_ != source_.rawSize())
            return false;
        stopReader(); // it has read every frame: the file is the caller's again
        return source_.in().atEnd();
    }
    uint64_t keyedChecksum(uint64_t plain) const override {
        return source_.aead() ? source_.aead()->keys().keyedChecksum(name(), plain) : plain;
    }
    bool sealed() const override { return source_.aead() != nullptr; }

private:
    /// The raw bytes of the next frame; 0 past the last.
    uint64_t nextFrameBytes() const {
        return std::min<uint64_t>(kPackedFrameRaw, source_.rawSize() - served_);
    }

    /// Takes the next frame: decoded into `into` (its raw size) when given, else into its slot,
    /// whose bytes current_ then serves; without `decode`, read and passed over undecoded.
    Result<void> takeFrame(std::span<std::byte> into, bool decode = true) {
        uint64_t whole = nextFrameBytes();
        if (!whole)
            return makeError(ErrorCode::Image, "%s: read past its %llu bytes of contents",
                             name().c_str(), static_cast<unsigned long long>(source_.rawSize()));
        if (failed_)
            return *failed_; // an earlier frame could not be read or decoded
        current_ = {};
        at_ = 0;
        auto frame = decode ? decodeNext(into) : passNext();
        if (!frame.ok()) {
            failed_ = frame.error();
            return std::move(frame).error();
        }
        if (decode && into.empty())
            current_ = *frame;
        served_ += whole;
        return success();
    }

    /// The next frame, read and not decoded: none of its bytes are served.
    Result<std::span<const std::byte>> passNext() {
        if (!reader_.joinable()) {
            HAL_TRY(source_.read(slots_[0]));
        } else {
            HAL_TRY_ASSIGN(size_t slot, fromReader());
            std::lock_guard lock(mu_);
            release(slot);
        }
        return std::span<const std::byte>();
    }

    Result<std::span<const std::byte>> decodeNext(std::span<std::byte> into) {
        if (!reader_.joinable())
            return source_.next(slots_[0], into);
        HAL_TRY_ASSIGN(size_t slot, fromReader());
        auto frame = aside_[slot].state == Aside::Decoded ? decodedAside(slot, into)
                                                          : source_.decode(slots_[slot], into);
        std::lock_guard lock(mu_);
        if (into.empty() && frame.ok())
            held_ = slot; // its bytes are served until the next frame is taken
        else
            release(slot);
        return frame;
    }

    /// Gives slot `slot` back to the reader; mu_ held.
    void release(size_t slot) {
        free_.push_back(slot);
        changed_.notify_all();
    }

    /// The frame the reader decoded in slot `slot`: copied into `into` when given (zeros there
    /// when it did not decode), else served from the slot.
    Result<std::span<const std::byte>> decodedAside(size_t slot, std::span<std::byte> into) {
        Result<std::span<const std::byte>>& frame = *aside_[slot].frame;
        if (into.empty())
            return frame;
        if (!frame.ok()) {
            std::fill(into.begin(), into.end(), std::byte{0});
            return frame.error();
        }
        if (frame->size() != into.size())
            return makeError(ErrorCode::Internal, "%s: a frame of %zu raw bytes decoded for %zu",
                             name().c_str(), frame->size(), into.size());
        memcpy(into.data(), frame->data(), into.size());
        return std::span<const std::byte>(into);
    }

    /// The slot of the next frame the reader read, once the reader is not decoding it; the one
    /// the caller held goes back to it.
    Result<size_t> fromReader() {
        std::unique_lock lock(mu_);
        if (held_ != kNone)
            release(std::exchange(held_, kNone));
        changed_.wait(lock, [&] {
            return !read_.empty() && aside_[read_.front().first].state != Aside::Decoding;
        });
        auto [slot, read] = std::move(read_.front());
        read_.pop_front();
        if (!read.ok())
            return std::move(read).error();
        return slot;
    }

    /// The reader: each frame's bytes in turn into a free slot, until the last, an error, or
    /// stop; a read error goes to the caller in the frame's place. While no slot is free, and
    /// once every frame is read, it decodes frames the caller has not taken yet.
    void readAhead() {
        std::unique_lock lock(mu_);
        for (uint64_t f = 0; f < source_.frameCount(); ++f) {
            while (!stop_ && free_.empty())
                if (!decodeOneAside(lock))
                    changed_.wait(lock);
            if (stop_)
                return;
            size_t slot = free_.back();
            free_.pop_back();
            aside_[slot] = {};
            lock.unlock();
            auto read = source_.read(slots_[slot]);
            bool failed = !read.ok();
            lock.lock();
            read_.emplace_back(slot, std::move(read));
            changed_.notify_all();
            if (failed)
                return;
        }
        while (!stop_ && decodeOneAside(lock)) {
        }
    }

    /// Decodes the newest frame read and not taken, not decoded yet, and worth it
    /// (FrameSource::worthDecodingAside), outside the lock `lock` holds; false when there is
    /// none.
    bool decodeOneAside(std::unique_lock<std::mutex>& lock) {
        for (auto it = read_.rbegin(); it != read_.rend(); ++it) {
            auto& [slot, read] = *it;
            if (!read.ok() || aside_[slot].state != Aside::None ||
                !source_.worthDecodingAside(slots_[slot]))
                continue;
            size_t chosen = slot; // `it` may not outlive the unlock: the caller pops frames
            aside_[chosen].state = Aside::Decoding;
            lock.unlock();
            auto frame = source_.decodeAside(slots_[chosen]);
            lock.lock();
            aside_[chosen].frame = std::move(frame);
            aside_[chosen].state = Aside::Decoded;
            changed_.notify_all();
            return true;
        }
        return false;
    }

    void stopReader() { base::stopWorker(reader_, mu_, changed_, stop_); }

    static constexpr size_t kNone = ~size_t{0};
    /// One frame decoded by the caller, three read ahead: the disk keeps a few MiB in flight.
    static constexpr size_t kSlots = 4;
    FrameSource source_;
    std::vector<FrameBuffers> slots_;
    std::span<const std::byte> current_; ///< the raw bytes of the frame being served
    size_t at_ = 0;                      ///< in current_
    uint64_t served_ = 0;                ///< raw bytes of the frames taken so far
    // The reader's, under mu_: slots it may fill, frames read (in order), the slot the caller
    // serves bytes from.
    std::thread reader_;
    std::mutex mu_;
    std::condition_variable changed_;
    std::vector<size_t> free_;
    std::deque<std::pair<size_t, Result<void>>> read_;
    /// Each slot's frame as the reader decoded it aside (the state under mu_; the frame is the
    /// reader's until Decoded, then the caller's).
    struct Aside {
        enum State { None, Decoding, Decoded } state = None;
        std::optional<Result<std::span<const std::byte>>> frame;
    };
    std::vector<Aside> aside_;
    size_t held_ = kNone;
    bool stop_ = false;
    std::optional<Error> failed_; ///< the error an earlier frame gave, for every later read
};

} // namespace

std::string packedImageName(const std::string& name) {
    return withOurPrefix(name, kPackedPrefix);
}

bool isPackedImageName(const std::string& name) {
    size_t slash = name.rfind('/'); // a parent's file is named from the child's directory
    return std::string_view(name)
        .substr(slash == std::string::npos ? 0 : slash + 1)
        .starts_with(kPackedPrefix);
}

Result<std::unique_ptr<ImageWriter>> createContentsImage(ImageStore& store, const std::string& name,
                                                         uint64_t size, const CodecSpec& spec) {
    HAL_TRY_ASSIGN(std::shared_ptr<const SealKeys> keys, store.contentKeys().dumpKeys(store));
    if ((spec.codec != Codec::None || keys) && !isPackedImageName(name))
        return makeError(ErrorCode::Internal,
                         "%s: compressed or encrypted contents need a packed name", name.c_str());
    std::unique_ptr<Aead> aead;
    if (keys) {
        HAL_TRY_ASSIGN(aead, Aead::make(keys));
    }
    HAL_TRY_ASSIGN(std::unique_ptr<ImageWriter> out, createFramedImage(store, name, size));
    if (spec.codec == Codec::None && !isPackedImageName(name))
        return out;
    FramePlace place{name, size, 0, chunkCount(size, kPackedFrameRaw)};
    return std::unique_ptr<ImageWriter>(
        new PackingWriter(std::move(out), spec, std::move(aead), std::move(place)));
}

Result<FramedImage> openContentsImage(ImageStore& store, const std::string& name) {
    HAL_TRY_ASSIGN(std::shared_ptr<const SealKeys> keys,
                   store.contentKeys().keysOf(store, directoryOf(name)));
    if (keys && !isPackedImageName(name))
        return makeError(ErrorCode::Image,
                         "%s: the checkpoint is encrypted, and this contents file is not (an "
                         "encrypted checkpoint's contents are in amdgpu-packed-* files)",
                         name.c_str());
    std::unique_ptr<Aead> aead;
    if (keys) {
        HAL_TRY_ASSIGN(aead, Aead::make(keys));
    }
    HAL_TRY_ASSIGN(FramedImage image, openFramedImage(store, name));
    if (!isPackedImageName(name))
        return image;
    image.reader = std::make_unique<UnpackingReader>(std::move(image.reader), image.announced,
                                                     std::move(aead));
    image.contents = static_cast<int64_t>(image.announced);
    return image;
}

std::string storedContentsName(ImageStore& store, const std::string& plain) {
    std::string packed = packedImageName(plain);
    if (packed != plain && !store.exists(plain) && store.exists(packed))
        return packed;
    return plain;
}

} // namespace formats
