#pragma once
/// \file
/// Reading a contents image back the way a restore's reads may come: in steps of any size, with
/// a pause before each (a caller slower than the reader).

#include "formats/packed_image.h"

#include <chrono>
#include <thread>
#include <vector>

namespace testsupport {

/// Reads the `n` bytes of contents image `name` of `store` in reads of `step`, `pause` before
/// each, then checks its end.
inline base::Result<std::vector<std::byte>> readInSteps(formats::ImageStore& store,
                                                        const std::string& name, size_t n,
                                                        size_t step,
                                                        std::chrono::milliseconds pause = {}) {
    HAL_TRY_ASSIGN(formats::FramedImage in, formats::openContentsImage(store, name));
    std::vector<std::byte> back(n);
    for (size_t at = 0; at < n; at += step) {
        std::this_thread::sleep_for(pause);
        HAL_TRY(in.reader->readExact(std::span(back).subspan(at, std::min(step, n - at))));
    }
    HAL_TRY(formats::expectImageEnd(in, n));
    return back;
}

} // namespace testsupport
