#pragma once
/// \file
/// Image tags (issue 52, item 2): in an encrypted checkpoint, every image of ours that a restore
/// reads whole (metadata: the render-node, KFD and dma-buf images; the topology image; chunk
/// records) has a tag beside it, `amdgpu-tag-<rest of its name>`, made under the checkpoint's key
/// (SealKeys::imageTag: HMAC-SHA256 over the image's name, its bytes and, for a chunk record,
/// the id of the checkpoint it was dumped against). So what the metadata says a contents file
/// fills (GPU, handle, address, size, and the keyed checksum of the contents) and which parent a
/// child's record names are authenticated: without the private key, nobody edits an entry, swaps
/// two BOs' handles, drops a checksum or puts another checkpoint in a parent's place and has the
/// restore take it. The contents files need no tag: each frame's AEAD binds it to its file's name
/// and its checkpoint (formats/content_cipher.h), and the keyed checksum in the tagged metadata
/// binds the whole contents to the entry that names the file.
///
/// The tag file, little-endian: "AGIT" (4 bytes), version u32 (1), the tag (32 bytes).
///
/// Where `content-private-key` is set, a restore (and the tool's readers) checks the tag of every
/// such image of an encrypted checkpoint before it decodes it: a tag that does not match is an
/// Image error naming the image and its tag; a missing one too, unless `content-allow-plaintext`
/// says to accept checkpoints without these guarantees (checkpoints in the clear, and encrypted
/// ones made before tags). A node without the private key cannot check tags (nor open the
/// contents they vouch for), and reads the metadata unchecked, as `image show` does.

#include "base/result.h"
#include "formats/image_store.h"

#include <cstddef>
#include <optional>
#include <span>
#include <string>

namespace formats {

using base::Result;

/// The name of the tag of image `name` ("../ck1/amdgpu-chunks-5.img" ->
/// "../ck1/amdgpu-tag-chunks-5.img").
std::string imageTagName(const std::string& name);

/// Dump: writes the tag of image `name` of `store`, which holds `bytes`, when the dump is
/// encrypted (nothing otherwise). `parentDir`: for a chunk record, the directory of the
/// checkpoint it was dumped against, whose id the tag binds.
Result<void> writeImageTag(ImageStore& store, const std::string& name,
                           std::span<const std::byte> bytes,
                           const std::optional<std::string>& parentDir = std::nullopt);

/// Restore: checks image `name` of `store`, read as `bytes`, against its tag (see above).
/// `parentDir`: for a chunk record, the directory of the parent it names.
Result<void> checkImageTag(ImageStore& store, const std::string& name,
                           std::span<const std::byte> bytes,
                           const std::optional<std::string>& parentDir = std::nullopt);

} // namespace formats
