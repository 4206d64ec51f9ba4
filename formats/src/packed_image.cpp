#include "formats/packed_image.h"

#include "formats/chunk_map.h"
#include "formats/content_keys.h"
#include "formats/image_names.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace hal {
namespace {

constexpr std::string_view kPackedPrefix = "amdgpu-packed-";

/// Compresses what a lane writes into frames of kPackedFrameRaw raw bytes.
/// Sealed with `aead` when the checkpoint is encrypted (formats/content_cipher.h): compression
/// first, then encryption.
class PackingWriter final : public ImageWriter {
public:
    PackingWriter(std::unique_ptr<ImageWriter> out, CodecSpec spec, std::unique_ptr<Aead> aead,
                  FramePlace place)
        : out_(std::move(out)), spec_(spec), frame_(maxFrameSize(kPackedFrameRaw)),
          aead_(std::move(aead)), place_(std::move(place)) {
        raw_.reserve(kPackedFrameRaw);
        if (aead_)
            sealed_.resize(maxSealedFrame(maxFrameSize(kPackedFrameRaw)));
    }
    Result<void> write(std::span<const std::byte> data) override {
        if (!data.empty())
            onlyZeros_ = false;
        while (!data.empty()) {
            size_t n = std::min<size_t>(data.size(), kPackedFrameRaw - raw_.size());
            raw_.insert(raw_.end(), data.begin(), data.begin() + static_cast<ptrdiff_t>(n));
            data = data.subspan(n);
            HAL_TRY(flushFull());
        }
        return success();
    }
    Result<void> writeZeros(uint64_t length) override {
        while (length) {
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
        return out_->close();
    }
    uint64_t written() const override { return done_ + raw_.size(); }
    uint64_t keyedChecksum(uint64_t plain) const override {
        return aead_ ? aead_->keys().keyedChecksum(place_.file, plain) : plain;
    }

private:
    Result<void> flushFull() { return raw_.size() == kPackedFrameRaw ? flush() : success(); }
    Result<void> flush() {
        // An encrypted frame of zeros only (a hole, or a chunk the parent holds) is compressed
        // whatever the option says: encrypted, it could not be a hole of the file.
        CodecSpec spec = aead_ && onlyZeros_ && spec_.codec == Codec::None
                             ? CodecSpec{Codec::Lz4, 0}
                             : spec_;
        HAL_TRY_ASSIGN(std::span<const std::byte> frame, encodeChunk(spec, raw_, frame_));
        if (aead_) {
            place_.index = frames_;
            HAL_TRY_ASSIGN(frame, aead_->seal(place_, frame, sealed_));
        }
        HAL_TRY(out_->write(frame));
        done_ += raw_.size();
        raw_.clear();
        onlyZeros_ = true;
        ++frames_;
        return success();
    }

    std::unique_ptr<ImageWriter> out_;
    CodecSpec spec_;
    std::vector<std::byte> raw_;   ///< the frame being filled
    std::vector<std::byte> frame_; ///< the encoded frame
    uint64_t done_ = 0;            ///< raw bytes in frames written
    std::unique_ptr<Aead> aead_;   ///< null: not encrypted
    FramePlace place_;
    std::vector<std::byte> sealed_; ///< the sealed frame
    bool onlyZeros_ = true;         ///< the frame being filled holds writeZeros' bytes only
    uint64_t frames_ = 0;
};

/// Serves the raw bytes of a packed file, decoding one frame at a time.
class UnpackingReader final : public ImageReader {
public:
    UnpackingReader(std::unique_ptr<ImageReader> in, uint64_t rawSize, std::unique_ptr<Aead> aead)
        : in_(std::move(in)), rawSize_(rawSize), frame_(maxFrameSize(kPackedFrameRaw)),
          raw_(kPackedFrameRaw), aead_(std::move(aead)) {
        if (aead_)
            sealed_.resize(maxSealedFrame(maxFrameSize(kPackedFrameRaw)));
    }
    Result<void> readExact(std::span<std::byte> out) override {
        while (!out.empty()) {
            if (at_ == have_)
                HAL_TRY(nextFrame());
            size_t n = std::min(out.size(), have_ - at_);
            memcpy(out.data(), raw_.data() + at_, n);
            at_ += n;
            out = out.subspan(n);
        }
        return success();
    }
    int64_t size() const override { return -1; }
    const std::string& name() const override { return in_->name(); }
    Result<bool> atEnd() override {
        if (at_ != have_ || served_ != rawSize_)
            return false;
        return in_->atEnd();
    }
    uint64_t keyedChecksum(uint64_t plain) const override {
        return aead_ ? aead_->keys().keyedChecksum(name(), plain) : plain;
    }

private:
    Result<void> nextFrame() {
        if (served_ == rawSize_)
            return makeError(ErrorCode::Image, "%s: read past its %llu bytes of contents",
                             name().c_str(), static_cast<unsigned long long>(rawSize_));
        auto where = [&] {
            return strFormat("%s: frame %llu (contents bytes from %llu)", name().c_str(),
                             static_cast<unsigned long long>(frames_),
                             static_cast<unsigned long long>(served_));
        };
        uint64_t expected = std::min<uint64_t>(kPackedFrameRaw, rawSize_ - served_);
        std::span<const std::byte> frame;
        if (aead_) {
            HAL_TRY_ASSIGN(frame, readSealed(where()));
        } else {
            HAL_TRY_ASSIGN(frame, readPlain(where(), expected));
        }
        auto header = readFrameHeader(frame);
        if (!header.ok())
            return makeError(ErrorCode::Image, "%s: %s", where().c_str(),
                             header.error().message().c_str());
        if (header->rawSize != expected)
            return makeError(
                ErrorCode::Image, "%s: holds %u raw bytes, a packed file's frame here holds %llu",
                where().c_str(), header->rawSize, static_cast<unsigned long long>(expected));
        auto decoded = decodeChunk(frame, raw_);
        if (!decoded.ok())
            return makeError(ErrorCode::Image, "%s: %s", where().c_str(),
                             decoded.error().message().c_str());
        at_ = 0;
        have_ = decoded.value();
        served_ += have_;
        ++frames_;
        return success();
    }

    /// Reads the next frame, unencrypted, into frame_.
    Result<std::span<const std::byte>> readPlain(const std::string& where, uint64_t expected) {
        std::span<std::byte> head = std::span(frame_).first(kFrameHeader);
        HAL_TRY_CONTEXT(in_->readExact(head), "reading the header of %s", where.c_str());
        auto header = readFrameHeader(head);
        if (!header.ok())
            return makeError(ErrorCode::Image, "%s: %s", where.c_str(),
                             header.error().message().c_str());
        if (header->rawSize != expected)
            return makeError(
                ErrorCode::Image, "%s: holds %u raw bytes, a packed file's frame here holds %llu",
                where.c_str(), header->rawSize, static_cast<unsigned long long>(expected));
        HAL_TRY_CONTEXT(in_->readExact(std::span(frame_).subspan(kFrameHeader, header->storedSize)),
                        "reading %s", where.c_str());
        return std::span<const std::byte>(std::span(frame_).first(header->frameSize()));
    }

    /// Reads the next sealed frame and opens it into frame_.
    Result<std::span<const std::byte>> readSealed(const std::string& where) {
        std::span<std::byte> head = std::span(sealed_).first(kSealHeader);
        HAL_TRY_CONTEXT(in_->readExact(head), "reading the header of %s", where.c_str());
        auto header = readSealHeader(head, sealed_.size() - kSealHeader);
        if (!header.ok())
            return makeError(ErrorCode::Image, "%s: %s", where.c_str(),
                             header.error().message().c_str());
        HAL_TRY_CONTEXT(in_->readExact(std::span(sealed_).subspan(kSealHeader, header->sealedSize)),
                        "reading %s", where.c_str());
        FramePlace place{name(), rawSize_, frames_, chunkCount(rawSize_, kPackedFrameRaw)};
        auto opened = aead_->open(place, std::span(sealed_).first(header->frameSize()), frame_);
        if (!opened.ok())
            return makeError(ErrorCode::Image, "%s: %s", where.c_str(),
                             opened.error().message().c_str());
        return std::span<const std::byte>(std::span(frame_).first(opened.value()));
    }

    std::unique_ptr<ImageReader> in_;
    uint64_t rawSize_;
    std::vector<std::byte> frame_;
    std::vector<std::byte> raw_;
    size_t at_ = 0, have_ = 0; ///< in raw_
    uint64_t served_ = 0;      ///< raw bytes decoded so far
    uint64_t frames_ = 0;
    std::unique_ptr<Aead> aead_; ///< null: not encrypted
    std::vector<std::byte> sealed_;
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
        return makeError(ErrorCode::Internal, "%s: compressed or encrypted contents need a packed name",
                         name.c_str());
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

} // namespace hal
