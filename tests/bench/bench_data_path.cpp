// bench.data_path: the whole in-memory data path of one GPU, a content lane with a fake SDMA
// copy (memcpy from "VRAM" in host memory), the checksum, and image files in /dev/shm, against
// the same lane without the checksum, in the same run; dump and restore. Exits non-zero only when
// it could not measure.
#include "bench_util.h"

#include "hal/content_pipeline.h"
#include "hal/framed_image.h"
#include "hal/image_store.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>

namespace {

constexpr uint64_t kVram = 512ull << 20;   // the GPU's contents
constexpr uint64_t kBo = 64ull << 20;      // in BOs of this size
constexpr uint64_t kStaging = 64ull << 20; // max-buffer-size's default
constexpr int kRuns = 5;

/// "SDMA" between a BO of the fake VRAM and a staging slot.
class FakeSdmaBo : public hal::ContentSource, public hal::ContentSink {
public:
    explicit FakeSdmaBo(std::byte* bo) : bo_(bo) {}
    hal::Result<void> read(uint64_t offset, std::span<std::byte> out) override {
        memcpy(out.data(), bo_ + offset, out.size());
        return hal::success();
    }
    hal::Result<void> write(uint64_t offset, std::span<const std::byte> in) override {
        memcpy(bo_ + offset, in.data(), in.size());
        return hal::success();
    }

private:
    std::byte* bo_;
};

struct Rig {
    std::string dir;
    std::unique_ptr<hal::ImageStore> store;
    std::unique_ptr<std::byte[]> vram{new (std::nothrow) std::byte[kVram]};
    std::vector<std::unique_ptr<FakeSdmaBo>> bos;
    hal::StagingBuffer staging{kStaging};

    std::vector<hal::DumpImage> dumpImages() {
        std::vector<hal::DumpImage> images;
        for (size_t i = 0; i < bos.size(); ++i) {
            hal::DumpImage image;
            image.name = "bo-" + std::to_string(i) + ".img";
            image.create = [this, name = image.name] {
                return hal::createFramedImage(*store, name, kBo);
            };
            image.pieces.push_back({bos[i].get(), nullptr, kBo, "BO " + std::to_string(i)});
            images.push_back(std::move(image));
        }
        return images;
    }
    std::vector<hal::RestoreImage> restoreImages(const std::vector<hal::DumpImage>& dumped,
                                                 bool verify) {
        std::vector<hal::RestoreImage> images;
        for (size_t i = 0; i < bos.size(); ++i) {
            hal::RestoreImage image;
            image.name = dumped[i].name;
            image.open = [this, name = image.name] { return hal::openFramedImage(*store, name); };
            image.pieces.push_back({nullptr, bos[i].get(), kBo, "BO " + std::to_string(i)});
            if (verify)
                image.expected = dumped[i].checksum;
            images.push_back(std::move(image));
        }
        return images;
    }
    hal::LaneOptions lane(bool hash) {
        hal::LaneOptions o;
        o.gpu = "GPU 0xbe00";
        o.staging = staging.span();
        o.hash = hash;
        o.progressSeconds = -1;
        return o;
    }
};

} // namespace

int main() {
    Rig rig;
    char tmpl[] = "/dev/shm/criu-amdgpu-bench.XXXXXX";
    if (!rig.vram || !mkdtemp(tmpl)) {
        fprintf(stderr, "bench.data_path: cannot allocate %llu MiB or a directory in /dev/shm\n",
                static_cast<unsigned long long>(kVram >> 20));
        return 1;
    }
    rig.dir = tmpl;
    auto store = hal::openDirectoryStore(rig.dir);
    if (!store.ok()) {
        fprintf(stderr, "bench.data_path: %s\n", store.error().describe().c_str());
        return 1;
    }
    rig.store = std::move(store).value();
    for (uint64_t i = 0; i < kVram; ++i)
        rig.vram[i] = static_cast<std::byte>(i * 131 + (i >> 13));
    for (uint64_t off = 0; off < kVram; off += kBo)
        rig.bos.push_back(std::make_unique<FakeSdmaBo>(rig.vram.get() + off));

    bool failed = false;
    std::vector<hal::DumpImage> last;
    auto dump = [&](bool hash) {
        return benchutil::medianSeconds(kRuns, [&] {
            auto images = rig.dumpImages();
            auto r = hal::runDumpLane(images, rig.lane(hash));
            failed = failed || !r.ok();
            if (hash)
                last = std::move(images);
        });
    };
    auto restore = [&](bool hash) {
        return benchutil::medianSeconds(kRuns, [&] {
            auto images = rig.restoreImages(last, hash);
            auto r = hal::runRestoreLane(images, rig.lane(hash));
            failed = failed || !r.ok();
        });
    };
    double dumpBare = dump(false), dumpHashed = dump(true);
    double restoreBare = restore(false), restoreHashed = restore(true);
    std::filesystem::remove_all(rig.dir);
    if (failed || dumpBare <= 0 || restoreBare <= 0) {
        fprintf(stderr, "bench.data_path: a lane failed or took no measurable time\n");
        return 1;
    }
    printf("bench.data_path: one GPU lane, %llu MiB in %llu MiB BOs, fake SDMA (memcpy) <-> "
           "staging (%llu MiB, %u slots) <-> image files in /dev/shm, medians of %d runs (%s)\n",
           static_cast<unsigned long long>(kVram >> 20), static_cast<unsigned long long>(kBo >> 20),
           static_cast<unsigned long long>(kStaging >> 20), hal::kLaneSlots, kRuns,
           benchutil::conditions().c_str());
    auto line = [](const char* what, double bare, double hashed) {
        double b = benchutil::mibPerSecond(kVram, bare), h = benchutil::mibPerSecond(kVram, hashed);
        printf("  %-8s without checksum %7.0f MiB/s (the limit), with XXH3-64 %7.0f MiB/s: "
               "%.2f (target: at least 0.8)\n",
               what, b, h, h / b);
    };
    line("dump", dumpBare, dumpHashed);
    line("restore", restoreBare, restoreHashed);
    return 0;
}
