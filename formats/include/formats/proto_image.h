#pragma once
/// \file
/// Protobuf images in the reference plugin's layout: an 8-byte host-endian size, then that many
/// bytes of packed protobuf (no magic, no criu framing).

#include "base/result.h"
#include "formats/image_store.h"

#include <protobuf-c/protobuf-c.h>

#include <memory>
#include <string>
#include <string_view>

namespace formats {

using base::Result;

/// Largest protobuf payload accepted on read (a corrupt size header must not allocate GiBs).
/// Our images and CRIU's plugin's are far smaller: a KFD image holds one small entry a BO, and
/// its kernel data.
inline constexpr uint64_t kMaxProtoImageSize = 64ull << 20;
/// The most memory one unpacked message may take. A small payload can unpack into much more (an
/// empty sub-message is 2 bytes packed, a struct unpacked), so unpacking counts what it
/// allocates and fails beyond this.
inline constexpr uint64_t kMaxProtoUnpackedBytes = 256ull << 20;

/// Packs `message` and writes it as image `name`.
Result<void> writeProtoImage(ImageStore& store, const std::string& name,
                             const ProtobufCMessage* message);

/// Frees an unpacked protobuf-c message.
struct ProtoFree {
    void operator()(void* message) const;
};
/// An unpacked message owned by a unique_ptr.
template <typename T> using UniqueProto = std::unique_ptr<T, ProtoFree>;

/// Packs `message` into bytes (for a message carried inside another's `bytes` field).
std::string packProto(const ProtobufCMessage* message);

/// Unpacks `bytes` as `descriptor`; an Image error naming `what` when they do not hold one, or
/// when it would take more than kMaxProtoUnpackedBytes.
Result<ProtobufCMessage*> unpackProtoRaw(std::string_view bytes,
                                         const ProtobufCMessageDescriptor* descriptor,
                                         const std::string& what);

/// Typed wrapper of unpackProtoRaw.
template <typename T>
Result<UniqueProto<T>> unpackProto(std::string_view bytes,
                                   const ProtobufCMessageDescriptor* descriptor,
                                   const std::string& what) {
    HAL_TRY_ASSIGN(ProtobufCMessage * raw, unpackProtoRaw(bytes, descriptor, what));
    return UniqueProto<T>(reinterpret_cast<T*>(raw));
}

/// Reads image `name` and unpacks it as `descriptor`; a bad header, a truncated file or a payload
/// that does not unpack is an Image error naming the file.
Result<ProtobufCMessage*> readProtoImageRaw(ImageStore& store, const std::string& name,
                                            const ProtobufCMessageDescriptor* descriptor);

/// Typed wrapper of readProtoImageRaw.
template <typename T>
Result<UniqueProto<T>> readProtoImage(ImageStore& store, const std::string& name,
                                      const ProtobufCMessageDescriptor* descriptor) {
    HAL_TRY_ASSIGN(ProtobufCMessage * raw, readProtoImageRaw(store, name, descriptor));
    return UniqueProto<T>(reinterpret_cast<T*>(raw));
}

} // namespace formats
