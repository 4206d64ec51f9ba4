#pragma once
// lz4 and zstd, loaded on first use (on_demand_library.h): a dump or restore that neither
// compresses nor reads a compressed checkpoint never maps them. codec_libraries.cpp defines the
// functions chunk_codec.cpp calls as forwards; chunk_codec.cpp calls requireCodecLibrary before
// it compresses or decompresses, so that a missing library is an error naming it.
#include "base/result.h"
#include "formats/chunk_codec.h"

namespace formats {

using base::Result;

/// Loads the library of `codec` once per process (none needs none); the error, when it cannot,
/// names the library and `neededBy`.
Result<void> requireCodecLibrary(Codec codec, const char* neededBy);

} // namespace formats
