#pragma once
/// \file
/// The fixture of the tests of encrypted contents files (sealed_contents_test.cpp,
/// sealed_keys_test.cpp): a checkpoint directory, two key pairs, a packed file written with the
/// certificate and read with a private key, and the file's bytes to tamper with.

#include "formats/content_keys.h"
#include "formats/packed_image.h"
#include "formats/seal_image.h"

#include "read_in_steps.h"
#include "temp_dir.h"
#include "test_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

namespace sealedtest {
namespace fs = std::filesystem;

inline constexpr size_t kFrame = formats::kPackedFrameRaw;
/// A sealed frame of kFrame incompressible bytes stored raw.
inline constexpr size_t kSealedFrame =
    formats::kSealHeader + formats::kFrameHeader + kFrame + formats::kTagBytes;

inline std::vector<std::byte> randomBytes(size_t n, unsigned seed = 1) {
    std::mt19937_64 rng(seed);
    std::vector<std::byte> v(n);
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x = rng();
        memcpy(v.data() + i, &x, std::min<size_t>(8, n - i));
    }
    return v;
}

inline std::string fileBytes(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

inline void putFileBytes(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

struct Sealed : ::testing::Test {
    testsupport::TempDir keysDir, root;
    testsupport::KeyFiles keys = testsupport::writeTestKeys(keysDir.path(), 0);
    testsupport::KeyFiles other = testsupport::writeTestKeys(keysDir.path(), 1, "other");
    std::string dir = root / "ck";
    std::string name = formats::packedImageName("amdgpu-drm-pages-1-128-0000.img");
    std::vector<std::byte> data = randomBytes(2 * kFrame + 12345);

    Sealed() { fs::create_directories(dir); }

    std::unique_ptr<formats::ImageStore> store(const std::string& path,
                                               formats::SealOptions options) {
        auto s = formats::openDirectoryStore(path).value();
        s->contentKeys().configure(std::move(options));
        return s;
    }
    formats::SealOptions dumping(formats::Cipher cipher = formats::Cipher::Aes256Gcm) {
        return {cipher, keys.certificate, keys.privateKey};
    }
    formats::SealOptions restoring(const std::string& privateKey) {
        return {formats::Cipher::None, "", privateKey};
    }

    /// Dumps `bytes` into `name` of `s` with `spec`; returns the writer's keyed checksum of 42.
    uint64_t write(formats::ImageStore& s, const std::vector<std::byte>& bytes,
                   formats::CodecSpec spec = {}, const std::string& file = "") {
        auto out = formats::createContentsImage(s, file.empty() ? name : file, bytes.size(), spec);
        EXPECT_TRUE(out.ok()) << out.error().describe();
        if (!out.ok())
            return 0;
        EXPECT_TRUE((*out)->write(bytes).ok());
        EXPECT_TRUE((*out)->close().ok());
        return (*out)->keyedChecksum(42);
    }
    base::Result<std::vector<std::byte>> read(formats::ImageStore& s, size_t n,
                                              const std::string& file = "") {
        HAL_TRY_ASSIGN(formats::FramedImage in,
                       formats::openContentsImage(s, file.empty() ? name : file));
        std::vector<std::byte> back(n);
        HAL_TRY(in.reader->readExact(back));
        HAL_TRY(formats::expectImageEnd(in, n));
        return back;
    }
    /// Reads `n` bytes of `name` back with the private key (testsupport::readInSteps).
    base::Result<std::vector<std::byte>> readInSteps(size_t n, size_t step,
                                                     std::chrono::milliseconds pause = {}) {
        return testsupport::readInSteps(*store(dir, restoring(keys.privateKey)), name, n, step,
                                        pause);
    }
    /// `name` opened with the private key.
    base::Result<formats::FramedImage> openWithKey() {
        return formats::openContentsImage(*store(dir, restoring(keys.privateKey)), name);
    }
    /// Flips a bit of byte `at` of the raw bytes of `name`'s frame `frame` (frames of kFrame
    /// incompressible bytes, stored raw).
    void tamper(size_t frame, size_t at) {
        std::string path = dir + "/" + name;
        std::string file = fileBytes(path);
        file[8 + frame * kSealedFrame + formats::kSealHeader + formats::kFrameHeader + at] ^= 1;
        putFileBytes(path, file);
    }
    std::string readError(const std::string& privateKey, const std::string& file = "") {
        auto s = store(dir, restoring(privateKey));
        auto r = read(*s, data.size(), file);
        return r.ok() ? std::string("restored") : r.error().describe();
    }
};

} // namespace sealedtest
