#pragma once
/// \file
/// One GPU's content lane over a fake VRAM in host memory (the "SDMA" copy is a memcpy) and image
/// files in a directory: what the data-path benchmarks measure.

#include "datapath/content_pipeline.h"
#include "formats/framed_image.h"
#include "formats/image_store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace benchutil {

/// "SDMA" between a BO of the fake VRAM and a staging slot.
class FakeSdmaBo : public content::ContentSource, public content::ContentSink {
public:
    explicit FakeSdmaBo(std::byte* bo) : bo_(bo) {}
    base::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        memcpy(out.data(), bo_ + offset, out.size());
        return base::success();
    }
    base::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        memcpy(bo_ + offset, in.data(), in.size());
        return base::success();
    }

private:
    std::byte* bo_;
};

/// The fake VRAM a lane benchmark measures: 512 MiB, or $BENCH_MIB rounded down to BOs of
/// `boBytes` (one at least).
inline uint64_t laneBenchBytes(uint64_t boBytes) {
    if (const char* m = getenv("BENCH_MIB"))
        return std::max<uint64_t>((strtoull(m, nullptr, 10) << 20) / boBytes, 1) * boBytes;
    return 512ull << 20;
}

/// `vramBytes` of fake VRAM in BOs of `boBytes`, whose images go to `store`.
struct LaneRig {
    LaneRig(uint64_t vramBytes, uint64_t boBytes, uint64_t stagingBytes)
        : vram(new (std::nothrow) std::byte[vramBytes]), vramSize(vramBytes), boSize(boBytes),
          staging(stagingBytes) {
        if (vram)
            for (uint64_t off = 0; off + boBytes <= vramBytes; off += boBytes)
                bos.push_back(std::make_unique<FakeSdmaBo>(vram.get() + off));
    }

    /// True when the fake VRAM was allocated; else says so on stderr, naming `bench`.
    bool allocated(const char* bench) const {
        if (!vram)
            fprintf(stderr, "%s: cannot allocate %llu MiB\n", bench,
                    static_cast<unsigned long long>(vramSize >> 20));
        return vram != nullptr;
    }

    std::vector<datapath::DumpImage> dumpImages() {
        std::vector<datapath::DumpImage> images;
        for (size_t i = 0; i < bos.size(); ++i) {
            datapath::DumpImage image;
            image.name = "bo-" + std::to_string(i) + ".img";
            image.create = [this, name = image.name] {
                return formats::createFramedImage(*store, name, boSize);
            };
            image.pieces.push_back({bos[i].get(), nullptr, boSize, "BO " + std::to_string(i)});
            images.push_back(std::move(image));
        }
        return images;
    }
    /// The images `dumped` wrote, checked against their checksums when `verify`.
    std::vector<datapath::RestoreImage>
    restoreImages(const std::vector<datapath::DumpImage>& dumped, bool verify) {
        std::vector<datapath::RestoreImage> images;
        for (size_t i = 0; i < bos.size(); ++i) {
            datapath::RestoreImage image;
            image.name = dumped[i].name;
            image.open = [this, name = image.name] {
                return formats::openFramedImage(*store, name);
            };
            image.readAhead = [this, name = image.name](uint64_t bytes) {
                store->readAhead(name, bytes);
            };
            image.pieces.push_back({nullptr, bos[i].get(), boSize, "BO " + std::to_string(i)});
            if (verify)
                image.expected = dumped[i].checksum;
            images.push_back(std::move(image));
        }
        return images;
    }
    datapath::LaneOptions lane(bool hash, bool holes = true) {
        datapath::LaneOptions o;
        o.gpu = "GPU 0xbe00";
        o.staging = staging.span();
        o.hash = hash;
        o.holes = holes;
        o.progressSeconds = -1;
        return o;
    }

    std::unique_ptr<std::byte[]> vram;
    uint64_t vramSize;
    uint64_t boSize;
    std::unique_ptr<formats::ImageStore> store;
    std::vector<std::unique_ptr<FakeSdmaBo>> bos;
    content::StagingBuffer staging;
};

} // namespace benchutil
