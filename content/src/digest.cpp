#include "content/digest.h"

// Debian's libxxhash exports XXH3 with a run-time choice of SSE2, AVX2 or AVX-512
// (xxh_x86dispatch.h maps the XXH3 names onto it).
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif
#include <xxhash.h>

namespace content {

using base::ErrorCode;
using base::makeError;
using base::Result;
using base::success;

const char* digestName(DigestKind kind) {
    return kind == DigestKind::Xxh3_64 ? "XXH3-64" : "FNV-1a 64";
}

struct ContentDigest::Xxh3State {
    XXH3_state_t* state = XXH3_createState();
    Xxh3State() { XXH3_64bits_reset(state); }
    ~Xxh3State() { XXH3_freeState(state); }
};

ContentDigest::ContentDigest(DigestKind kind) : kind_(kind) {
    if (kind_ == DigestKind::Xxh3_64)
        xxh3_ = std::make_unique<Xxh3State>();
}

ContentDigest::~ContentDigest() = default;
ContentDigest::ContentDigest(ContentDigest&&) noexcept = default;
ContentDigest& ContentDigest::operator=(ContentDigest&&) noexcept = default;

void ContentDigest::update(std::span<const std::byte> data) {
    if (xxh3_)
        XXH3_64bits_update(xxh3_->state, data.data(), data.size());
    else
        fnv_.update(data);
}

uint64_t ContentDigest::value() const {
    return xxh3_ ? XXH3_64bits_digest(xxh3_->state) : fnv_.value();
}

uint64_t xxh3Of(std::span<const std::byte> data) {
    return XXH3_64bits(data.data(), data.size());
}

Result<void> verifyChecksum(const std::string& image, const ContentChecksum& want, uint64_t got) {
    if (got == want.value)
        return success();
    return makeError(
        ErrorCode::Image,
        "%s is corrupt: its %s checksum is %016llx, the dump recorded %016llx (the image was "
        "changed or damaged after the dump; restore from an intact copy)",
        image.c_str(), digestName(want.kind), static_cast<unsigned long long>(got),
        static_cast<unsigned long long>(want.value));
}

} // namespace content
