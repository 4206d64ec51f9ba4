#pragma once
/// \file
/// Encryption of BO contents (issue 35; option `content-encryption`): each frame of a packed
/// contents file (formats/packed_image.h, after compression) is sealed with an AEAD under a key
/// of the checkpoint, so model weights and data never rest in the clear. The keys are GnuTLS's
/// (the library criu itself links for its own image encryption, with the same certificate and
/// key formats); the AEAD of each frame is OpenSSL 3's EVP, whose ChaCha20-Poly1305 runs at disk
/// speed where bookworm's GnuTLS does not (the top CMakeLists.txt says why); the frames are the
/// same bytes either library writes (tests/formats/sealed_interop_test.cpp). Nothing here is
/// hand-written.
///
/// Keys. A checkpoint has a 256-bit master key (random, or its parent's in an incremental chain,
/// so chunk identities compare) and a 16-byte random checkpoint id. From the master, HKDF-SHA256
/// (RFC 5869, expand only: the master is uniformly random) derives
///   - the AEAD key of this checkpoint: info "criu-amdgpu aead v1" || checkpoint id, so no two
///     checkpoints of a chain share one;
///   - the chunk identity key: info "criu-amdgpu chunk id v1"; a chunk record's checksum is
///     HMAC-SHA256(key, XXH3-128 of the chunk) cut to 16 bytes, so it tells nothing of the
///     contents without the key, and still compares across a chain;
///   - the checksum key: info "criu-amdgpu checksum v1"; the checksum of a file's contents that
///     the metadata records becomes HMAC-SHA256(key, id || file name || XXH3-64) cut to 8 bytes;
///   - the key check: info "criu-amdgpu key check v1" || checkpoint id || cipher (16 bytes, in
///     the key image), which tells whether an unwrapped key is the right one;
///   - the image tag key: info "criu-amdgpu image tag v1" || checkpoint id; an image's tag
///     (formats/image_tag.h) is HMAC-SHA256(key, "criu-amdgpu image tag v1" || file name || the
///     parent checkpoint's id, or 16 zero bytes || the image's bytes), so no image of ours reads
///     as another's, another checkpoint's, or one made against another parent.
///
/// A sealed frame, little-endian: "AGSF" (4 bytes), version u8 (1), cipher u8 (1: AES-256-GCM,
/// 2: ChaCha20-Poly1305), flags u16 (0), sealed size u32 (the ciphertext and the 16-byte tag),
/// nonce (12 bytes, random: under one AEAD key 2^32 frames of 2 MiB, 8 PiB, stay far inside the
/// bound for random nonces), then the sealed bytes: the encrypted chunk frame
/// (formats/chunk_codec.h) followed by its tag. The associated data binds the frame to its place:
/// "criu-amdgpu sealed frame v1", the checkpoint id, the file's name (without a directory), the
/// contents' raw size (the file's size header), the frame's index and the file's frame count. A
/// frame moved, swapped, taken from another file or checkpoint, or a file cut short or with a
/// changed size header, fails to open.

#include "base/result.h"
#include "formats/secret_bytes.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace formats {

using base::Result;

struct ChunkSum;

/// The ciphers of `content-encryption`, with the values the formats record.
enum class Cipher : uint8_t {
    None = 0,
    Aes256Gcm = 1,
    Chacha20Poly1305 = 2,
};

/// The spellings parseCipher accepts.
inline constexpr const char* kCipherForms = "none, aes-256-gcm, chacha20-poly1305";

/// "none", "aes-256-gcm", "chacha20-poly1305"; a Config error naming `content-encryption`.
Result<Cipher> parseCipher(std::string_view text);
/// The canonical name parseCipher reads back.
const char* cipherName(Cipher cipher);

inline constexpr size_t kMasterKeyBytes = 32;
inline constexpr size_t kCheckpointIdBytes = 16;
inline constexpr size_t kKeyCheckBytes = 16;
inline constexpr size_t kNonceBytes = 12;
inline constexpr size_t kTagBytes = 16;
/// The length of a sealed frame's header.
inline constexpr size_t kSealHeader = 24;

using MasterKey = std::array<std::byte, kMasterKeyBytes>;
using CheckpointId = std::array<std::byte, kCheckpointIdBytes>;
using KeyCheck = std::array<std::byte, kKeyCheckBytes>;
/// The HMAC-SHA256 that authenticates one image of ours (formats/image_tag.h).
using ImageTag = std::array<std::byte, 32>;

/// `bytes` random bytes of GnuTLS's key generator.
Result<void> randomBytes(std::span<std::byte> out);

/// The keys of one checkpoint, derived from its master key and id; the master key and the keys
/// derived from it are key material (formats/secret_bytes.h: out of core dumps, zeroed when the
/// last holder drops them).
class SealKeys {
public:
    /// Derives every key; an error only when GnuTLS fails.
    static Result<std::shared_ptr<const SealKeys>> derive(Cipher cipher, const MasterKey& master,
                                                          const CheckpointId& id);
    Cipher cipher() const { return cipher_; }
    const CheckpointId& id() const { return id_; }
    const MasterKey& master() const { return secret_->master; }
    const KeyCheck& keyCheck() const { return check_; }
    /// The keyed identity of a chunk whose XXH3-128 is `plain`.
    ChunkSum chunkIdentity(const ChunkSum& plain) const;
    /// The keyed form of the XXH3-64 `plain` of the contents of `file` (its name without a
    /// directory is what counts).
    uint64_t keyedChecksum(const std::string& file, uint64_t plain) const;
    /// The tag of image `file` (its name without a directory counts) holding `bytes`, in a
    /// checkpoint made against the parent `parent` (null: none).
    ImageTag imageTag(const std::string& file, std::span<const std::byte> bytes,
                      const CheckpointId* parent) const;
    /// The AEAD key (for Aead).
    std::span<const std::byte> aeadKey() const { return secret_->aead; }

private:
    struct Material {
        MasterKey master;
        std::array<std::byte, 32> aead, identity, checksum, tag;
    };
    Cipher cipher_ = Cipher::None;
    Secret<Material> secret_;
    CheckpointId id_{};
    KeyCheck check_{};
};

/// The key check `master` gives for `id` and `cipher` (see SealKeys).
Result<KeyCheck> keyCheckOf(Cipher cipher, const MasterKey& master, const CheckpointId& id);

/// A sealed frame's header, read and checked.
struct SealHeader {
    Cipher cipher = Cipher::None;
    uint32_t sealedSize = 0;
    std::array<std::byte, kNonceBytes> nonce{};
    size_t frameSize() const { return kSealHeader + sealedSize; }
};

/// The largest sealed size a frame of at most `maxFrame` bytes (formats/chunk_codec.h) takes.
constexpr size_t maxSealedFrame(size_t maxFrame) {
    return kSealHeader + maxFrame + kTagBytes;
}

/// The header at the start of `bytes`: an Image error naming the field (magic, version, cipher,
/// flags, sealed size) when one is wrong. `maxSealed`: the largest sealed size accepted.
Result<SealHeader> readSealHeader(std::span<const std::byte> bytes, size_t maxSealed);

/// Where a frame belongs: what its associated data binds it to.
struct FramePlace {
    std::string file; ///< the contents file's name (a directory part is dropped)
    uint64_t rawSize = 0;
    uint64_t index = 0;
    uint64_t count = 0;
};

/// Seals and opens frames under one checkpoint's AEAD key; one per thread (an OpenSSL cipher
/// context).
class Aead {
public:
    static Result<std::unique_ptr<Aead>> make(std::shared_ptr<const SealKeys> keys);
    ~Aead();
    Aead(const Aead&) = delete;
    Aead& operator=(const Aead&) = delete;
    const SealKeys& keys() const { return *keys_; }
    /// Another context under the same keys, for another thread.
    Result<std::unique_ptr<Aead>> another() const { return make(keys_); }
    /// Seals `frame` for `place` into `out` (at least kSealHeader + frame.size() + kTagBytes
    /// bytes), with a fresh random nonce; returns the sealed frame, a prefix of `out`.
    Result<std::span<const std::byte>>
    seal(const FramePlace& place, std::span<const std::byte> frame, std::span<std::byte> out);
    /// seal of the frame `head` followed by `body` (a frame header and the bytes of a chunk
    /// stored raw, where they lie), without copying them together first.
    Result<std::span<const std::byte>> seal(const FramePlace& place,
                                            std::span<const std::byte> head,
                                            std::span<const std::byte> body,
                                            std::span<std::byte> out);
    /// Opens the sealed frame `sealed` (exactly one, header included) for `place` into `out`;
    /// returns the inner frame's length. An Image error when the tag does not verify: a wrong
    /// key, or a frame that is not this one of this file of this checkpoint. `out` may be the
    /// sealed bytes themselves (out.data() == sealed.data() + kSealHeader): opened in place.
    Result<size_t> open(const FramePlace& place, std::span<const std::byte> sealed,
                        std::span<std::byte> out);
    /// Where the inner frame's bytes after its first `head` go, chosen once those are open
    /// (unauthenticated yet): a span of at least `rest` bytes, or an empty one for `out`, right
    /// after the head.
    using RestPlace =
        std::function<std::span<std::byte>(std::span<const std::byte> head, size_t rest)>;
    /// open in two steps, as one stream: the inner frame's first `head` bytes into `out`, then
    /// the rest where `restTo` puts it (a frame header, then a raw chunk straight into the
    /// caller's buffer, without a copy). A frame that does not authenticate leaves zeros in both
    /// places. Returns the inner frame's length, head and rest.
    Result<size_t> open(const FramePlace& place, std::span<const std::byte> sealed,
                        std::span<std::byte> out, size_t head, const RestPlace& restTo);

private:
    Aead(std::shared_ptr<const SealKeys> keys, void* handle)
        : keys_(std::move(keys)), handle_(handle) {}
    std::string associatedData(const FramePlace& place) const;
    std::shared_ptr<const SealKeys> keys_;
    void* handle_; ///< EVP_CIPHER_CTX
};

/// Hex of `bytes` ("3fa2..."), for messages and `image show`.
std::string hexOf(std::span<const std::byte> bytes);

} // namespace formats
