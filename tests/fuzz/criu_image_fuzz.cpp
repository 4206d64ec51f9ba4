// criu's own images as `criu-amdgpu image verify` reads them (tools/criu_images): the framing
// (magic words, size-prefixed entries), then the entries as inventory.img and as files.img or
// ext-files.img, whichever the magic says.
#include "fuzz_target.h"

#include "criu_images/criu_facts.h"
#include "criu_images/criu_image_write.h"
#include "criu_images/image_framing.h"

void fuzzOne(std::string_view input) {
    auto image = criu_images::parseFramedImage("fuzz.img", input);
    if (!image)
        return;
    (void)criu_images::decodeInventory("fuzz.img", *image);
    (void)criu_images::decodeExternalFiles("fuzz.img", *image);
}

std::vector<std::string> fuzzSeeds() {
    using criu_images::FileRecord;
    using criu_images::kFdTypeExt;
    return {
        criu_images::inventoryImage(std::nullopt),
        criu_images::inventoryImage(std::vector<std::string>{}),
        criu_images::inventoryImage(std::vector<std::string>{"amdgpu_plugin", "cuda_plugin"}),
        criu_images::filesImage({{1, 1}, {kFdTypeExt, 5}, {kFdTypeExt, 0xffffffffu}}),
        criu_images::extFilesImage({3, 4}),
    };
}
