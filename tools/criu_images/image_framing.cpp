#include "criu_images/image_framing.h"

#include <cstring>

namespace criu_images {
namespace {

uint32_t wordAt(std::string_view bytes, uint64_t at) {
    uint32_t w = 0;
    std::memcpy(&w, bytes.data() + at, sizeof(w));
    return w;
}

void appendWord(std::string& out, uint32_t w) {
    char b[sizeof(w)];
    std::memcpy(b, &w, sizeof(w));
    out.append(b, sizeof(w));
}

} // namespace

bool isCriuMagic(uint32_t firstWord) {
    return firstWord == kCommonMagic || firstWord == kServiceMagic || firstWord == kInventoryMagic;
}

base::Result<FramedImage> parseFramedImage(const std::string& name, std::string_view bytes) {
    FramedImage image;
    if (bytes.size() < 4)
        return base::makeError(base::ErrorCode::Image,
                               "%s: %zu bytes, too short for criu's magic word", name.c_str(),
                               bytes.size());
    uint64_t at = 0;
    uint32_t first = wordAt(bytes, 0);
    at = 4;
    if (first == kCommonMagic || first == kServiceMagic) {
        if (bytes.size() < 8)
            return base::makeError(base::ErrorCode::Image,
                                   "%s: the file ends after criu's head magic, before the "
                                   "image's own magic",
                                   name.c_str());
        image.headMagic = first;
        image.magic = wordAt(bytes, 4);
        at = 8;
    } else if (first == kInventoryMagic) {
        image.magic = first;
    } else {
        return base::makeError(base::ErrorCode::Image,
                               "%s: the first word 0x%08x is no criu image magic (0x%08x, 0x%08x "
                               "or inventory's 0x%08x)",
                               name.c_str(), first, kCommonMagic, kServiceMagic, kInventoryMagic);
    }
    while (at < bytes.size()) {
        if (bytes.size() - at < 4)
            return base::makeError(base::ErrorCode::Image,
                                   "%s: at offset %llu: %zu byte(s) left, too few for an entry's "
                                   "size word: the file is cut",
                                   name.c_str(), static_cast<unsigned long long>(at),
                                   static_cast<size_t>(bytes.size() - at));
        uint32_t size = wordAt(bytes, at);
        if (bytes.size() - at - 4 < size)
            return base::makeError(base::ErrorCode::Image,
                                   "%s: at offset %llu: entry %zu announces %u bytes, %llu follow: "
                                   "the file is cut",
                                   name.c_str(), static_cast<unsigned long long>(at),
                                   image.entries.size() + 1, size,
                                   static_cast<unsigned long long>(bytes.size() - at - 4));
        image.entries.push_back({at, bytes.substr(at + 4, size)});
        at += 4 + static_cast<uint64_t>(size);
    }
    return image;
}

std::string frameImage(uint32_t headMagic, uint32_t magic,
                       const std::vector<std::string>& entries) {
    std::string out;
    if (headMagic != 0)
        appendWord(out, headMagic);
    appendWord(out, magic);
    for (const std::string& e : entries) {
        appendWord(out, static_cast<uint32_t>(e.size()));
        out += e;
    }
    return out;
}

} // namespace criu_images
