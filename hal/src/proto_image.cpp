#include "hal/proto_image.h"

#include <cstring>
#include <vector>

namespace hal {

void ProtoFree::operator()(void* message) const {
    if (message)
        protobuf_c_message_free_unpacked(static_cast<ProtobufCMessage*>(message), nullptr);
}

Result<void> writeProtoImage(ImageStore& store, const std::string& name,
                             const ProtobufCMessage* message) {
    size_t len = protobuf_c_message_get_packed_size(message);
    std::vector<std::byte> buf(sizeof(uint64_t) + len);
    uint64_t header = len;
    memcpy(buf.data(), &header, sizeof(header));
    protobuf_c_message_pack(message, reinterpret_cast<uint8_t*>(buf.data() + sizeof(header)));
    HAL_TRY_ASSIGN(auto writer, store.openWrite(name));
    HAL_TRY(writer->write(buf));
    return writer->close();
}

Result<ProtobufCMessage*> readProtoImageRaw(ImageStore& store, const std::string& name,
                                            const ProtobufCMessageDescriptor* descriptor) {
    HAL_TRY_ASSIGN(auto reader, store.openRead(name));
    uint64_t len = 0;
    HAL_TRY_CONTEXT(reader->readExact(std::as_writable_bytes(std::span(&len, 1))),
                    "reading the size header of %s", name.c_str());
    if (len > kMaxProtoImageSize ||
        (reader->size() >= 0 && len + sizeof(len) != static_cast<uint64_t>(reader->size())))
        return makeError(ErrorCode::Image,
                         "image %s is corrupt: its header announces %llu bytes of %s but the "
                         "file holds %lld",
                         name.c_str(), static_cast<unsigned long long>(len), descriptor->name,
                         static_cast<long long>(reader->size() - 8));
    std::vector<std::byte> payload(len);
    HAL_TRY(reader->readExact(payload));
    ProtobufCMessage* msg = protobuf_c_message_unpack(
        descriptor, nullptr, len, reinterpret_cast<const uint8_t*>(payload.data()));
    if (!msg)
        return makeError(ErrorCode::Image, "image %s does not hold a valid %s message",
                         name.c_str(), descriptor->name);
    return msg;
}

} // namespace hal
