// Encrypted contents files (content-encryption): frames sealed after compression read back byte
// for byte with the private key, and refused, naming the file and the frame, without it, with
// another key, tampered, moved, swapped, replayed from another checkpoint of the chain, cut
// short, or replaced by an unencrypted file; the key image and the keyed checksums.
#include "sealed_fixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

namespace {
using ::testing::HasSubstr;
using namespace sealedtest;

TEST(CipherOption, ParsesTheThreeNamesAndRefusesOthersNamingTheOption) {
    EXPECT_EQ(formats::parseCipher("none").value(), formats::Cipher::None);
    EXPECT_EQ(formats::parseCipher("aes-256-gcm").value(), formats::Cipher::Aes256Gcm);
    EXPECT_EQ(formats::parseCipher("chacha20-poly1305").value(), formats::Cipher::Chacha20Poly1305);
    for (const char* bad : {"", "aes", "AES-256-GCM", "aes-128-gcm"}) {
        auto r = formats::parseCipher(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_THAT(r.error().message(), HasSubstr("content-encryption"));
    }
}

TEST_F(Sealed, EachCipherWithAndWithoutCompressionReadsBackAndHidesTheBytes) {
    for (auto cipher : {formats::Cipher::Aes256Gcm, formats::Cipher::Chacha20Poly1305})
        for (auto spec : {formats::CodecSpec{}, formats::CodecSpec{formats::Codec::Zstd, 1}}) {
            fs::remove_all(dir);
            fs::create_directories(dir);
            // Half compressible, so the zstd frames are compressed then sealed.
            std::vector<std::byte> bytes = data;
            std::fill(bytes.begin(), bytes.begin() + kFrame / 2, std::byte{7});
            auto s = store(dir, dumping(cipher));
            write(*s, bytes, spec);
            std::string file = fileBytes(dir + "/" + name);
            std::string sample(reinterpret_cast<const char*>(bytes.data()) + kFrame, 64);
            EXPECT_EQ(file.find(sample), std::string::npos) << "plaintext in the file";
            EXPECT_TRUE(fs::exists(dir + "/" + formats::kSealImageName));
            auto back = read(*store(dir, restoring(keys.privateKey)), bytes.size());
            ASSERT_TRUE(back.ok()) << back.error().describe();
            EXPECT_TRUE(*back == bytes) << formats::cipherName(cipher) << " " << spec.describe();
        }
}

// A read of whole frames from a frame's start is opened (and decompressed) straight into the
// caller's buffer; any other read is served from the reader's own buffers: the same bytes either
// way, for each cipher, with compression and without.
TEST_F(Sealed, ReadsOfWholeFramesAndOfPiecesGiveTheSameBytes) {
    std::vector<std::byte> bytes = data;
    std::fill(bytes.begin(), bytes.begin() + kFrame / 2, std::byte{7}); // a frame that compresses
    for (auto cipher : {formats::Cipher::Aes256Gcm, formats::Cipher::Chacha20Poly1305})
        for (auto spec : {formats::CodecSpec{}, formats::CodecSpec{formats::Codec::Zstd, 1}}) {
            fs::remove_all(dir);
            fs::create_directories(dir);
            write(*store(dir, dumping(cipher)), bytes, spec);
            for (size_t step : {kFrame, 2 * kFrame, kFrame + 1, size_t{4096}, size_t{1000}}) {
                auto back = readInSteps(bytes.size(), step);
                ASSERT_TRUE(back.ok()) << back.error().describe();
                EXPECT_TRUE(*back == bytes) << formats::cipherName(cipher) << " " << spec.describe()
                                            << ", reads of " << step;
            }
        }
}

// A frame opened straight into the caller's buffer that does not authenticate leaves zeros
// there: nothing of it reaches the GPU, and the frames before it came back whole.
TEST_F(Sealed, ATamperedFrameReadWholeLeavesNothingOfItInTheCallersBuffer) {
    write(*store(dir, dumping()), data);
    tamper(1, 5000);
    auto s = store(dir, restoring(keys.privateKey));
    auto in = formats::openContentsImage(*s, name);
    ASSERT_TRUE(in.ok()) << in.error().describe();
    std::vector<std::byte> back(2 * kFrame, std::byte{0xaa});
    ASSERT_TRUE(in->reader->readExact(std::span(back).first(kFrame)).ok());
    EXPECT_TRUE(std::equal(back.begin(), back.begin() + kFrame, data.begin()));
    auto r = in->reader->readExact(std::span(back).subspan(kFrame));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("frame 1"));
    EXPECT_THAT(r.error().describe(), HasSubstr("does not authenticate"));
    EXPECT_TRUE(std::all_of(back.begin() + kFrame, back.end(),
                            [](std::byte b) { return b == std::byte{0}; }));
}

// A caller slower than the disk: the reader finds no free slot, opens the newest frames it read
// itself (in their slots, with a cipher context of its own), and the caller copies them. Every
// byte comes back, read whole or in pieces, for each cipher, with compression and without.
TEST_F(Sealed, GivenACallerSlowerThanTheReader_WhenRead_ThenTheFramesOpenedAsideComeBackTheSame) {
    std::vector<std::byte> bytes = randomBytes(7 * kFrame + 999, 5);
    std::fill(bytes.begin(), bytes.begin() + kFrame, std::byte{7}); // a frame that compresses
    for (auto cipher : {formats::Cipher::Aes256Gcm, formats::Cipher::Chacha20Poly1305})
        for (auto spec : {formats::CodecSpec{}, formats::CodecSpec{formats::Codec::Lz4, 0}}) {
            fs::remove_all(dir);
            fs::create_directories(dir);
            write(*store(dir, dumping(cipher)), bytes, spec);
            for (size_t step : {kFrame, kFrame + 1}) {
                auto back = readInSteps(bytes.size(), step, std::chrono::milliseconds(3));
                ASSERT_TRUE(back.ok()) << back.error().describe();
                EXPECT_TRUE(*back == bytes) << formats::cipherName(cipher) << " " << spec.describe()
                                            << ", reads of " << step;
            }
        }
}

// The same slow caller and a bit flipped in frame 5, which the reader opens aside: refused when
// the caller reaches it, naming the frame, with zeros where the caller wanted its bytes; the
// frames before it came back whole.
TEST_F(Sealed,
       GivenATamperedFrameTheReaderOpensAside_WhenReached_ThenRefusedWithZerosInTheCallersBuffer) {
    std::vector<std::byte> bytes = randomBytes(8 * kFrame, 6);
    write(*store(dir, dumping()), bytes);
    tamper(5, 77);
    auto in = openWithKey();
    ASSERT_TRUE(in.ok()) << in.error().describe();
    std::vector<std::byte> back(bytes.size(), std::byte{0xaa});
    for (size_t f = 0; f < 5; ++f) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        ASSERT_TRUE(in->reader->readExact(std::span(back).subspan(f * kFrame, kFrame)).ok());
    }
    EXPECT_TRUE(std::equal(back.begin(), back.begin() + 5 * kFrame, bytes.begin()));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto r = in->reader->readExact(std::span(back).subspan(5 * kFrame, kFrame));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("frame 5"));
    EXPECT_THAT(r.error().describe(), HasSubstr("does not authenticate"));
    EXPECT_TRUE(std::all_of(back.begin() + 5 * kFrame, back.begin() + 6 * kFrame,
                            [](std::byte b) { return b == std::byte{0}; }));
}

// A parent's frame that a newer image's chunk replaces is passed over whole: read, not opened,
// so none of its bytes are served and a damaged one costs nothing; a frame passed over in part
// is opened (the rest of it is served) and refused when it does not authenticate.
TEST_F(Sealed, GivenAWholeFramePassedOver_WhenSkipped_ThenItIsNotOpenedAndTheFramesAfterItAre) {
    std::vector<std::byte> bytes = randomBytes(4 * kFrame, 7);
    write(*store(dir, dumping()), bytes);
    tamper(1, 5000);
    auto whole = openWithKey();
    ASSERT_TRUE(whole.ok()) << whole.error().describe();
    std::vector<std::byte> back(kFrame);
    ASSERT_TRUE(whole->reader->readExact(back).ok());
    ASSERT_TRUE(whole->reader->skip(kFrame).ok());
    ASSERT_TRUE(whole->reader->readExact(back).ok());
    EXPECT_TRUE(std::equal(back.begin(), back.end(), bytes.begin() + 2 * kFrame));
    auto part = openWithKey();
    ASSERT_TRUE(part.ok()) << part.error().describe();
    ASSERT_TRUE(part->reader->skip(kFrame + 10).ok() == false);
}

TEST_F(Sealed, KeyImageRecordsCipherAndCertificateAndTheKeyedChecksumsAgree) {
    auto s = store(dir, dumping(formats::Cipher::Chacha20Poly1305));
    uint64_t dumped = write(*s, data);
    EXPECT_NE(dumped, 42u) << "the checksum a dump records is keyed";
    auto image = formats::readSealImage(*s, formats::kSealImageName);
    ASSERT_TRUE(image.ok() && image->has_value());
    EXPECT_EQ((*image)->cipher, formats::Cipher::Chacha20Poly1305);
    auto cert = formats::loadCertificate(keys.certificate, "content-certificate");
    ASSERT_TRUE(cert.ok()) << cert.error().describe();
    EXPECT_EQ((*image)->certificate, cert->fingerprint);
    auto r = store(dir, restoring(keys.privateKey));
    auto in = formats::openContentsImage(*r, name);
    ASSERT_TRUE(in.ok()) << in.error().describe();
    EXPECT_EQ(in->reader->keyedChecksum(42), dumped);
}

TEST_F(Sealed, WithoutThePrivateKeyOrWithAnotherOneTheCheckpointIsRefused) {
    write(*store(dir, dumping()), data);
    EXPECT_THAT(readError(""), HasSubstr("content-private-key"));
    EXPECT_THAT(readError(""), HasSubstr(formats::kSealImageName));
    EXPECT_THAT(readError(other.privateKey),
                HasSubstr("does not unwrap with the content-private-key"));
    EXPECT_EQ(readError(keys.privateKey), "restored");
}

TEST_F(Sealed, ATamperedFrameIsRefusedNamingTheFileAndTheFrame) {
    write(*store(dir, dumping()), data);
    std::string path = dir + "/" + name;
    std::string bytes = fileBytes(path);
    bytes[8 + kSealedFrame + 1000] ^= 1; // inside the second frame's ciphertext
    putFileBytes(path, bytes);
    std::string e = readError(keys.privateKey);
    EXPECT_THAT(e, HasSubstr(name));
    EXPECT_THAT(e, HasSubstr("frame 1"));
    EXPECT_THAT(e, HasSubstr("does not authenticate"));
}

TEST_F(Sealed, SwappedFramesAreRefused) {
    write(*store(dir, dumping()), data);
    std::string path = dir + "/" + name;
    std::string bytes = fileBytes(path);
    std::string first = bytes.substr(8, kSealedFrame);
    std::string second = bytes.substr(8 + kSealedFrame, kSealedFrame);
    bytes.replace(8, kSealedFrame, second);
    bytes.replace(8 + kSealedFrame, kSealedFrame, first);
    putFileBytes(path, bytes);
    EXPECT_THAT(readError(keys.privateKey), HasSubstr("frame 0"));
}

TEST_F(Sealed, AFileMovedToAnotherBosNameIsRefused) {
    write(*store(dir, dumping()), data);
    std::string moved = formats::packedImageName("amdgpu-drm-pages-1-128-0001.img");
    fs::rename(dir + "/" + name, dir + "/" + moved);
    EXPECT_THAT(readError(keys.privateKey, moved), HasSubstr("does not authenticate"));
}

TEST_F(Sealed, AFileCutShortIsRefusedWithItsSizeHeaderTooAndAFileExtendedAsWell) {
    write(*store(dir, dumping()), data);
    std::string path = dir + "/" + name;
    std::string whole = fileBytes(path);
    // The last frame cut off.
    putFileBytes(path, whole.substr(0, 8 + 2 * kSealedFrame));
    EXPECT_THAT(readError(keys.privateKey), HasSubstr("frame 2"));
    // ... and the size header changed to say two frames: the frames were sealed for three.
    std::string cut = whole.substr(0, 8 + 2 * kSealedFrame);
    uint64_t two = 2 * kFrame;
    memcpy(cut.data(), &two, 8);
    putFileBytes(path, cut);
    auto s = store(dir, restoring(keys.privateKey));
    auto r = read(*s, two);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("frame 0"));
    // A frame appended.
    putFileBytes(path, whole + whole.substr(8, kSealedFrame));
    EXPECT_NE(readError(keys.privateKey), "restored");
}

TEST_F(Sealed, AFrameFromAnotherCheckpointOfTheChainIsRefused) {
    // The child shares the parent's master key (a chain), not its checkpoint id.
    std::string childDir = root / "child";
    fs::create_directories(childDir);
    write(*store(dir, dumping()), data);
    auto child = store(childDir, dumping());
    auto keysOfChild = child->contentKeys().prepareDump(*child, std::string("../ck"));
    ASSERT_TRUE(keysOfChild.ok()) << keysOfChild.error().describe();
    auto parentKeys = store(dir, restoring(keys.privateKey));
    auto ofParent = parentKeys->contentKeys().keysOf(*parentKeys, "");
    ASSERT_TRUE(ofParent.ok() && *ofParent && *keysOfChild);
    EXPECT_EQ((*ofParent)->master(), (*keysOfChild)->master());
    EXPECT_NE((*ofParent)->id(), (*keysOfChild)->id());
    // The parent's file replayed into the child under the same name.
    write(*child, randomBytes(data.size(), 2));
    fs::copy_file(dir + "/" + name, childDir + "/" + name, fs::copy_options::overwrite_existing);
    auto r = read(*store(childDir, restoring(keys.privateKey)), data.size());
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("does not authenticate"));
}

/// A directory store that counts the key image's lookups and takes its time answering them, as
/// an image streamer does (each lookup there is a request, and a second one finds nothing).
class SlowKeyImageStore : public formats::ImageStore {
public:
    explicit SlowKeyImageStore(const std::string& dir)
        : inner_(formats::openDirectoryStore(dir).value()) {}
    base::Result<std::unique_ptr<formats::ImageWriter>> openWrite(const std::string& n) override {
        return inner_->openWrite(n);
    }
    base::Result<std::unique_ptr<formats::ImageReader>> openRead(const std::string& n) override {
        return inner_->openRead(n);
    }
    bool exists(const std::string& n) override {
        if (n == formats::kSealImageName) {
            ++keyImageLookups;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return inner_->exists(n);
    }
    std::string describe() const override { return inner_->describe(); }
    std::atomic<int> keyImageLookups{0};

private:
    std::unique_ptr<formats::ImageStore> inner_;
};

TEST_F(Sealed, LanesAskingForTheKeysAtOnceReadTheKeyImageOnceAndShareTheKeys) {
    write(*store(dir, dumping()), data);
    SlowKeyImageStore slow(dir);
    slow.contentKeys().configure(restoring(keys.privateKey));
    constexpr int kLanes = 6;
    std::vector<std::shared_ptr<const formats::SealKeys>> got(kLanes);
    std::vector<std::thread> lanes;
    for (int i = 0; i < kLanes; ++i)
        lanes.emplace_back([&, i] {
            auto k = slow.contentKeys().keysOf(slow, "");
            if (k.ok())
                got[i] = *k;
        });
    for (auto& t : lanes)
        t.join();
    EXPECT_EQ(slow.keyImageLookups.load(), 1) << "a streamer serves the key image once";
    ASSERT_TRUE(got[0]);
    for (const auto& k : got)
        EXPECT_EQ(k, got[0]);
}

TEST_F(Sealed, AChainIsEncryptedThroughoutOrNotAtAll) {
    std::string plainDir = root / "plain", childDir = root / "child";
    fs::create_directories(plainDir);
    fs::create_directories(childDir);
    write(*store(dir, dumping()), data);
    auto clear = store(childDir, {});
    auto r = clear->contentKeys().prepareDump(*clear, std::string("../ck"));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("content-encryption none"));
    auto noKey = store(childDir, {formats::Cipher::Aes256Gcm, keys.certificate, ""});
    r = noKey->contentKeys().prepareDump(*noKey, std::string("../ck"));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("content-private-key"));
    auto sealed = store(childDir, dumping());
    r = sealed->contentKeys().prepareDump(*sealed, std::string("../plain"));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("not encrypted"));
}

TEST_F(Sealed, AnUnencryptedFileInAnEncryptedCheckpointIsRefused) {
    write(*store(dir, dumping()), data);
    // A packed file written without a key replaces the encrypted one.
    std::string elsewhere = root / "clear";
    fs::create_directories(elsewhere);
    write(*store(elsewhere, {}), data, formats::CodecSpec{formats::Codec::Lz4, 0});
    fs::copy_file(elsewhere + "/" + name, dir + "/" + name, fs::copy_options::overwrite_existing);
    EXPECT_THAT(readError(keys.privateKey), HasSubstr("AGSF"));
    // A file under the name of an unencrypted, uncompressed dump.
    std::string plain = "amdgpu-drm-pages-1-128-0000.img";
    putFileBytes(dir + "/" + plain, std::string(8, '\0'));
    EXPECT_THAT(readError(keys.privateKey, plain), HasSubstr("is not"));
}

TEST_F(Sealed, KeyFilesMustBeOnTrustedPaths) {
    chmod(keys.certificate.c_str(), 0666);
    auto s = store(dir, dumping());
    auto out = formats::createContentsImage(*s, name, 10, {});
    ASSERT_FALSE(out.ok());
    EXPECT_THAT(out.error().describe(), HasSubstr("content-certificate"));
    EXPECT_FALSE(fs::exists(dir + "/" + formats::kSealImageName));
}

TEST(SealImageFormat, RoundTripsAndRefusesEveryMalformedField) {
    formats::SealImage image;
    image.cipher = formats::Cipher::Chacha20Poly1305;
    image.id[3] = std::byte{9};
    image.wrapped.assign(256, std::byte{5});
    std::string bytes = formats::encodeSealImage(image);
    auto back = formats::decodeSealImage(bytes, "k.img");
    ASSERT_TRUE(back.ok()) << back.error().describe();
    EXPECT_EQ(*back, image);
    auto refused = [&](std::string b, const char* what) {
        auto r = formats::decodeSealImage(b, "k.img");
        ASSERT_FALSE(r.ok()) << what;
        EXPECT_THAT(r.error().message(), HasSubstr("k.img")) << what;
    };
    for (size_t n = 0; n < bytes.size(); n += 7)
        refused(bytes.substr(0, n), "truncated");
    std::string b = bytes;
    b[0] = 'X';
    refused(b, "magic");
    b = bytes;
    b[8] = 3;
    refused(b, "version");
    b = bytes;
    b[12] = 3;
    refused(b, "cipher");
    b = bytes;
    b[13] = 0;
    refused(b, "key wrap");
    b = bytes;
    b[14] = 1;
    refused(b, "reserved");
    // Version 1 (RSA PKCS#1 v1.5) records no key wrap byte.
    image.wrap = formats::KeyWrap::RsaPkcs1v15;
    bytes = formats::encodeSealImage(image);
    EXPECT_EQ(bytes[8], 1);
    back = formats::decodeSealImage(bytes, "k.img");
    ASSERT_TRUE(back.ok()) << back.error().describe();
    EXPECT_EQ(*back, image);
    b = bytes;
    b[13] = 1;
    refused(b, "key wrap in version 1");
    refused(bytes + "x", "trailing byte");
}

} // namespace
