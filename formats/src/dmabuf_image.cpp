#include "formats/dmabuf_image.h"

#include "formats/proto_image.h"

#include "criu-amdgpu.pb-c.h"

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;

Result<void> writeDmabufImage(ImageStore& store, const DmabufImage& image) {
    CriuDmabufNode msg;
    criu_dmabuf_node__init(&msg);
    msg.has_gem_handle = true;
    msg.gem_handle = image.gemHandle;
    if (image.shareKey) {
        msg.has_share_key = true;
        msg.share_key = *image.shareKey;
    }
    if (image.renderFileId) {
        msg.has_render_file_id = true;
        msg.render_file_id = *image.renderFileId;
    }
    return writeProtoImage(store, dmabufImageName(image.id), &msg.base);
}

Result<DmabufImage> readDmabufImage(ImageStore& store, uint32_t id) {
    std::string name = dmabufImageName(id);
    HAL_TRY_ASSIGN(auto msg,
                   readProtoImage<CriuDmabufNode>(store, name, &criu_dmabuf_node__descriptor));
    if (!msg->has_gem_handle)
        return makeError(ErrorCode::Image, "%s lacks gem_handle, which every writer records",
                         name.c_str());
    DmabufImage image;
    image.id = id;
    image.gemHandle = msg->gem_handle;
    if (msg->has_share_key)
        image.shareKey = msg->share_key;
    if (msg->has_render_file_id)
        image.renderFileId = msg->render_file_id;
    return image;
}

} // namespace formats
