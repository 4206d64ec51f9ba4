#include "formats/packed_image.h"

#include "formats/image_names.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace hal {
namespace {

constexpr std::string_view kPackedPrefix = "amdgpu-packed-";

/// Compresses what a lane writes into frames of kPackedFrameRaw raw bytes.
class PackingWriter final : public ImageWriter {
public:
    PackingWriter(std::unique_ptr<ImageWriter> out, CodecSpec spec)
        : out_(std::move(out)), spec_(spec), frame_(maxFrameSize(kPackedFrameRaw)) {
        raw_.reserve(kPackedFrameRaw);
    }
    Result<void> write(std::span<const std::byte> data) override {
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

private:
    Result<void> flushFull() { return raw_.size() == kPackedFrameRaw ? flush() : success(); }
    Result<void> flush() {
        HAL_TRY_ASSIGN(std::span<const std::byte> frame, encodeChunk(spec_, raw_, frame_));
        HAL_TRY(out_->write(frame));
        done_ += raw_.size();
        raw_.clear();
        return success();
    }

    std::unique_ptr<ImageWriter> out_;
    CodecSpec spec_;
    std::vector<std::byte> raw_;   ///< the frame being filled
    std::vector<std::byte> frame_; ///< the encoded frame
    uint64_t done_ = 0;            ///< raw bytes in frames written
};

/// Serves the raw bytes of a packed file, decoding one frame at a time.
class UnpackingReader final : public ImageReader {
public:
    UnpackingReader(std::unique_ptr<ImageReader> in, uint64_t rawSize)
        : in_(std::move(in)), rawSize_(rawSize), frame_(maxFrameSize(kPackedFrameRaw)),
          raw_(kPackedFrameRaw) {}
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
        std::span<std::byte> head = std::span(frame_).first(kFrameHeader);
        HAL_TRY_CONTEXT(in_->readExact(head), "reading the header of %s", where().c_str());
        auto header = readFrameHeader(head);
        if (!header.ok())
            return makeError(ErrorCode::Image, "%s: %s", where().c_str(),
                             header.error().message().c_str());
        uint64_t expected = std::min<uint64_t>(kPackedFrameRaw, rawSize_ - served_);
        if (header->storedSize > header->rawSize)
            return makeError(ErrorCode::Image, "%s: stores %u bytes for %u raw ones",
                             where().c_str(), header->storedSize, header->rawSize);
        if (header->rawSize != expected)
            return makeError(
                ErrorCode::Image, "%s: holds %u raw bytes, a packed file's frame here holds %llu",
                where().c_str(), header->rawSize, static_cast<unsigned long long>(expected));
        HAL_TRY_CONTEXT(in_->readExact(std::span(frame_).subspan(kFrameHeader, header->storedSize)),
                        "reading %s", where().c_str());
        auto decoded = decodeChunk(std::span(frame_).first(header->frameSize()), raw_);
        if (!decoded.ok())
            return makeError(ErrorCode::Image, "%s: %s", where().c_str(),
                             decoded.error().message().c_str());
        at_ = 0;
        have_ = decoded.value();
        served_ += have_;
        ++frames_;
        return success();
    }

    std::unique_ptr<ImageReader> in_;
    uint64_t rawSize_;
    std::vector<std::byte> frame_;
    std::vector<std::byte> raw_;
    size_t at_ = 0, have_ = 0; ///< in raw_
    uint64_t served_ = 0;      ///< raw bytes decoded so far
    uint64_t frames_ = 0;
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
    if (spec.codec != Codec::None && !isPackedImageName(name))
        return makeError(ErrorCode::Internal, "%s: compressed contents need a packed name",
                         name.c_str());
    HAL_TRY_ASSIGN(std::unique_ptr<ImageWriter> out, createFramedImage(store, name, size));
    if (spec.codec == Codec::None && !isPackedImageName(name))
        return out;
    return std::unique_ptr<ImageWriter>(new PackingWriter(std::move(out), spec));
}

Result<FramedImage> openContentsImage(ImageStore& store, const std::string& name) {
    HAL_TRY_ASSIGN(FramedImage image, openFramedImage(store, name));
    if (!isPackedImageName(name))
        return image;
    image.reader = std::make_unique<UnpackingReader>(std::move(image.reader), image.announced);
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
