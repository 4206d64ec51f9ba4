#include "codec_libraries.h"

#include "on_demand_library.h"

// The declarations without their default visibility: the forwards below are hidden.
#define LZ4LIB_VISIBILITY
#define ZSTDLIB_VISIBILITY
#include <lz4.h>
#include <zstd.h>

#include <cstddef>

// The functions chunk_codec.cpp calls: X(return type, name, (parameters), (arguments)).
#define HAL_LZ4_FUNCTIONS(X)                                                                       \
    X(int, LZ4_compress_default, (const char* src, char* dst, int srcSize, int dstCapacity),       \
      (src, dst, srcSize, dstCapacity))                                                            \
    X(int, LZ4_decompress_safe, (const char* src, char* dst, int compressedSize, int dstCapacity), \
      (src, dst, compressedSize, dstCapacity))
#define HAL_ZSTD_FUNCTIONS(X)                                                                      \
    X(size_t, ZSTD_compressCCtx,                                                                   \
      (ZSTD_CCtx * cctx, void* dst, size_t dstCapacity, const void* src, size_t srcSize,           \
       int compressionLevel),                                                                      \
      (cctx, dst, dstCapacity, src, srcSize, compressionLevel))                                    \
    X(ZSTD_CCtx*, ZSTD_createCCtx, (void), ())                                                     \
    X(ZSTD_DCtx*, ZSTD_createDCtx, (void), ())                                                     \
    X(size_t, ZSTD_decompressDCtx,                                                                 \
      (ZSTD_DCtx * dctx, void* dst, size_t dstCapacity, const void* src, size_t srcSize),          \
      (dctx, dst, dstCapacity, src, srcSize))                                                      \
    X(size_t, ZSTD_findFrameCompressedSize, (const void* src, size_t srcSize), (src, srcSize))     \
    X(size_t, ZSTD_freeCCtx, (ZSTD_CCtx * cctx), (cctx))                                           \
    X(size_t, ZSTD_freeDCtx, (ZSTD_DCtx * dctx), (dctx))                                           \
    X(const char*, ZSTD_getErrorName, (size_t code), (code))                                       \
    X(unsigned long long, ZSTD_getFrameContentSize, (const void* src, size_t srcSize),             \
      (src, srcSize))                                                                              \
    X(unsigned, ZSTD_isError, (size_t code), (code))

namespace formats {

using base::Result;

namespace {

constexpr const char* kLz4Name = HAL_ON_DEMAND_SONAME("liblz4.so.", LZ4_VERSION_MAJOR);
constexpr const char* kZstdName = HAL_ON_DEMAND_SONAME("libzstd.so.", ZSTD_VERSION_MAJOR);

enum Lz4Function : size_t { HAL_LZ4_FUNCTIONS(HAL_ON_DEMAND_INDEX) kLz4Count };
enum ZstdFunction : size_t { HAL_ZSTD_FUNCTIONS(HAL_ON_DEMAND_INDEX) kZstdCount };
constexpr const char* kLz4Functions[] = {HAL_LZ4_FUNCTIONS(HAL_ON_DEMAND_NAME)};
constexpr const char* kZstdFunctions[] = {HAL_ZSTD_FUNCTIONS(HAL_ON_DEMAND_NAME)};

const LoadedLibrary& lz4() {
    static const LoadedLibrary once = loadLibrary(kLz4Name, kLz4Functions);
    return once;
}

const LoadedLibrary& zstd() {
    static const LoadedLibrary once = loadLibrary(kZstdName, kZstdFunctions);
    return once;
}

void* function(Lz4Function index) {
    return loadedFunction(lz4(), index, kLz4Functions, kLz4Name);
}

void* function(ZstdFunction index) {
    return loadedFunction(zstd(), index, kZstdFunctions, kZstdName);
}

} // namespace

Result<void> requireCodecLibrary(Codec codec, const char* neededBy) {
    if (codec == Codec::Lz4)
        return libraryLoaded(lz4(), kLz4Name, neededBy, "liblz4-1");
    if (codec == Codec::Zstd)
        return libraryLoaded(zstd(), kZstdName, neededBy, "libzstd1");
    return {};
}

} // namespace formats

// The forwards (on_demand_library.h).
HAL_LZ4_FUNCTIONS(HAL_ON_DEMAND_FORWARD)
HAL_ZSTD_FUNCTIONS(HAL_ON_DEMAND_FORWARD)
