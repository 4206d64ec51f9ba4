#include "formats/proto_image.h"

#include "formats/framed_image.h"
#include "formats/image_tag.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;
using base::strFormat;

void ProtoFree::operator()(void* message) const {
    if (message)
        protobuf_c_message_free_unpacked(static_cast<ProtobufCMessage*>(message), nullptr);
}

std::string packProto(const ProtobufCMessage* message) {
    std::string out(protobuf_c_message_get_packed_size(message), '\0');
    protobuf_c_message_pack(message, reinterpret_cast<uint8_t*>(out.data()));
    return out;
}

namespace {

/// malloc and free (so ProtoFree frees what it allocated), counting against a budget.
struct UnpackBudget {
    uint64_t left = kMaxProtoUnpackedBytes;
    bool exceeded = false;
};

void* budgetedAlloc(void* data, size_t size) {
    auto* budget = static_cast<UnpackBudget*>(data);
    if (size > budget->left) {
        budget->exceeded = true;
        return nullptr;
    }
    budget->left -= size;
    return malloc(size);
}

void budgetedFree(void*, void* pointer) {
    free(pointer);
}

} // namespace

Result<ProtobufCMessage*> unpackProtoRaw(std::string_view bytes,
                                         const ProtobufCMessageDescriptor* descriptor,
                                         const std::string& what) {
    UnpackBudget budget;
    ProtobufCAllocator allocator{budgetedAlloc, budgetedFree, &budget};
    ProtobufCMessage* msg = protobuf_c_message_unpack(
        descriptor, &allocator, bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data()));
    if (!msg && budget.exceeded)
        return makeError(ErrorCode::Image,
                         "%s: its %zu bytes would unpack into more than the %llu MiB a %s "
                         "message may take (a crafted image?)",
                         what.c_str(), bytes.size(),
                         static_cast<unsigned long long>(kMaxProtoUnpackedBytes >> 20),
                         descriptor->name);
    if (!msg)
        return makeError(ErrorCode::Image, "%s does not hold a valid %s message", what.c_str(),
                         descriptor->name);
    return msg;
}

Result<void> writeProtoImage(ImageStore& store, const std::string& name,
                             const ProtobufCMessage* message) {
    std::string buf = packProto(message);
    HAL_TRY_ASSIGN(auto writer, createFramedImage(store, name, buf.size()));
    HAL_TRY(writer->write(std::as_bytes(std::span(buf.data(), buf.size()))));
    HAL_TRY(writer->close());
    return writeImageTag(store, name, std::as_bytes(std::span(buf.data(), buf.size())));
}

Result<ProtobufCMessage*> readProtoImageRaw(ImageStore& store, const std::string& name,
                                            const ProtobufCMessageDescriptor* descriptor) {
    HAL_TRY_ASSIGN(FramedImage image, openFramedImage(store, name));
    if (image.announced > kMaxProtoImageSize)
        return makeError(ErrorCode::Image,
                         "image %s is corrupt: its header announces %llu bytes of %s, more than "
                         "the %llu a reader accepts",
                         name.c_str(), static_cast<unsigned long long>(image.announced),
                         descriptor->name, static_cast<unsigned long long>(kMaxProtoImageSize));
    HAL_TRY(checkContentsSize(image, image.announced,
                              strFormat("its header announces (a %s message)", descriptor->name)));
    // Grown as bytes arrive, so a lying header on a stream costs no more than the stream holds.
    std::vector<uint8_t> payload;
    constexpr uint64_t kChunk = 1 << 20;
    while (payload.size() < image.announced) {
        size_t have = payload.size();
        size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, image.announced - have));
        payload.resize(have + n);
        HAL_TRY(image.reader->readExact(std::as_writable_bytes(std::span(payload)).subspan(have)));
    }
    HAL_TRY(expectImageEnd(image, image.announced));
    HAL_TRY(checkImageTag(store, name, std::as_bytes(std::span(payload))));
    return unpackProtoRaw(
        std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()), descriptor,
        "image " + name);
}

} // namespace formats
