// The keys of encrypted checkpoints (issue 52): the key wrap (RSA-OAEP, one error for every
// failure to unwrap, RSA PKCS#1 v1.5 only with content-legacy-key-wrap, a key image moved back to
// version 1 refused), no downgrade where a private key is set (a key image missing at any level of
// a chain, contents in the clear), and key hygiene (key material out of core dumps and zeroed when
// dropped, a private key others may read refused, RSA under 2048 bits refused).
#include "sealed_fixture.h"

#include "rsa_oaep.h"
#include "vm_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <functional>

namespace {
using ::testing::HasSubstr;
using namespace sealedtest;

struct SealedKeys : Sealed {
    /// What reading `name` back with `options` gives: "restored" or the error.
    std::string readWith(const formats::SealOptions& options, const std::string& file = "") {
        auto s = store(dir, options);
        auto r = read(*s, data.size(), file);
        return r.ok() ? std::string("restored") : r.error().describe();
    }
    /// The key image of `dir`, changed by `change` and written back.
    void rewriteSeal(const std::function<void(formats::SealImage&)>& change) {
        auto s = store(dir, {});
        auto image = formats::readSealImage(*s, formats::kSealImageName);
        ASSERT_TRUE(image.ok() && image->has_value());
        formats::SealImage changed = **image;
        change(changed);
        putFileBytes(dir + "/" + formats::kSealImageName, formats::encodeSealImage(changed));
    }
    formats::Certificate certificate(const std::string& path) {
        auto cert = formats::loadCertificate(path, "content-certificate");
        EXPECT_TRUE(cert.ok()) << cert.error().describe();
        return cert.ok() ? *cert : formats::Certificate{};
    }
    /// The checkpoint's master key, unwrapped with the private key.
    formats::MasterKey masterKey() {
        auto s = store(dir, {});
        auto image = formats::readSealImage(*s, formats::kSealImageName);
        auto key = formats::PrivateKey::load(keys.privateKey, "content-private-key");
        EXPECT_TRUE(key.ok()) << key.error().describe();
        auto master = key->unwrap(**image, formats::kSealImageName);
        EXPECT_TRUE(master.ok()) << master.error().describe();
        return master.ok() ? **master : formats::MasterKey{};
    }
    /// A packed file of `data` in the clear, compressed, in place of the encrypted one.
    void replaceWithPlaintext() {
        std::string elsewhere = root / "clear";
        fs::create_directories(elsewhere);
        write(*store(elsewhere, {}), data, formats::CodecSpec{formats::Codec::Lz4, 0});
        fs::copy_file(elsewhere + "/" + name, dir + "/" + name,
                      fs::copy_options::overwrite_existing);
    }
};

TEST_F(SealedKeys, ANewKeyImageWrapsWithRsaOaepAndRecordsIt) {
    write(*store(dir, dumping()), data);
    std::string bytes = fileBytes(dir + "/" + formats::kSealImageName);
    EXPECT_EQ(bytes[8], 2) << "version 2";
    EXPECT_EQ(bytes[13], 1) << "key wrap 1: RSA-OAEP-SHA256";
    auto s = store(dir, {});
    auto image = formats::readSealImage(*s, formats::kSealImageName);
    ASSERT_TRUE(image.ok() && image->has_value());
    EXPECT_EQ((*image)->wrap, formats::KeyWrap::RsaOaepSha256);
    EXPECT_EQ(readWith(restoring(keys.privateKey)), "restored");
}

// A wrong key, a wrapped key that is not OAEP (its padding), one of another length, one for
// another key, one whose key check fails: one error, the same words, naming the file and the key.
TEST_F(SealedKeys, EveryFailureToUnwrapGivesTheSameError) {
    write(*store(dir, dumping()), data);
    std::string original = fileBytes(dir + "/" + formats::kSealImageName);
    formats::Certificate ours = certificate(keys.certificate);
    formats::Certificate theirs = certificate(other.certificate);
    formats::MasterKey master = masterKey();
    formats::MasterKey wrong = master;
    wrong[0] ^= std::byte{1};
    std::vector<std::function<void(formats::SealImage&)>> changes = {
        [](formats::SealImage&) {}, // read with the other key
        [](formats::SealImage& i) { i.wrapped = randomBytes(i.wrapped.size(), 9); },
        [&](formats::SealImage& i) {
            std::vector<std::byte> shorter(master.begin(), master.end() - 1);
            i.wrapped = formats::rsaOaepWrap(ours.der, shorter).value();
        },
        [&](formats::SealImage& i) { i.wrapped = formats::wrapKey(theirs, master).value(); },
        [&](formats::SealImage& i) { i.wrapped = formats::wrapKey(ours, wrong).value(); },
    };
    std::vector<std::string> errors;
    for (size_t i = 0; i < changes.size(); ++i) {
        putFileBytes(dir + "/" + formats::kSealImageName, original);
        rewriteSeal(changes[i]);
        auto s = store(dir, restoring(i == 0 ? other.privateKey : keys.privateKey));
        auto opened = s->contentKeys().keysOf(*s, "");
        ASSERT_FALSE(opened.ok()) << "change " << i;
        EXPECT_EQ(opened.error().code(), base::ErrorCode::Image) << "change " << i;
        errors.push_back(opened.error().describe());
    }
    EXPECT_THAT(errors[1], HasSubstr(formats::kSealImageName));
    EXPECT_THAT(errors[1], HasSubstr("does not unwrap with the content-private-key"));
    for (size_t i = 1; i < errors.size(); ++i)
        EXPECT_EQ(errors[i], errors[1]) << "change " << i;
    // With the other key the same words name the other key's file.
    std::string withOther = errors[1];
    withOther.replace(withOther.find(keys.privateKey), keys.privateKey.size(), other.privateKey);
    EXPECT_EQ(errors[0], withOther);
    putFileBytes(dir + "/" + formats::kSealImageName, original);
    EXPECT_EQ(readWith(restoring(keys.privateKey)), "restored");
}

// A checkpoint made before RSA-OAEP: its key wrapped with RSA PKCS#1 v1.5 in a version 1 key
// image. Refused, naming the option, without content-legacy-key-wrap; read with it.
TEST_F(SealedKeys, AKeyWrappedWithPkcs1v15IsReadOnlyWithTheLegacyOption) {
    write(*store(dir, dumping()), data);
    formats::MasterKey master = masterKey();
    formats::Certificate ours = certificate(keys.certificate);
    rewriteSeal([&](formats::SealImage& i) {
        i.wrap = formats::KeyWrap::RsaPkcs1v15;
        i.wrapped = formats::wrapKey(ours, master, formats::KeyWrap::RsaPkcs1v15).value();
    });
    EXPECT_EQ(fileBytes(dir + "/" + formats::kSealImageName)[8], 1) << "version 1";
    std::string refused = readWith(restoring(keys.privateKey));
    EXPECT_THAT(refused, HasSubstr("content-legacy-key-wrap"));
    EXPECT_THAT(refused, HasSubstr("PKCS#1 v1.5"));
    EXPECT_THAT(refused, HasSubstr(formats::kSealImageName));
    formats::SealOptions legacy = restoring(keys.privateKey);
    legacy.legacyKeyWrap = true;
    EXPECT_EQ(readWith(legacy), "restored");
    // A v1.5 failure gives the one error too.
    rewriteSeal([&](formats::SealImage& i) { i.wrapped = randomBytes(i.wrapped.size(), 3); });
    EXPECT_THAT(readWith(legacy), HasSubstr("does not unwrap with the content-private-key"));
}

// An attacker moves a new key image back to version 1 (PKCS#1 v1.5), to use a padding oracle:
// refused without the option before anything is decrypted; with it, the OAEP bytes do not
// unwrap as v1.5.
TEST_F(SealedKeys, AKeyImageMovedBackToVersion1IsRefused) {
    write(*store(dir, dumping()), data);
    rewriteSeal([](formats::SealImage& i) { i.wrap = formats::KeyWrap::RsaPkcs1v15; });
    EXPECT_THAT(readWith(restoring(keys.privateKey)), HasSubstr("content-legacy-key-wrap"));
    formats::SealOptions legacy = restoring(keys.privateKey);
    legacy.legacyKeyWrap = true;
    EXPECT_THAT(readWith(legacy), HasSubstr("does not unwrap with the content-private-key"));
}

// The downgrade: the key image deleted and the contents replaced in the clear. With a
// private key set it is refused, naming the key image and the option that would allow it.
TEST_F(SealedKeys,
       GivenAPrivateKey_WhenTheKeyImageIsDeletedAndTheContentsAreInTheClear_ThenRefused) {
    write(*store(dir, dumping()), data);
    fs::remove(dir + "/" + formats::kSealImageName);
    replaceWithPlaintext();
    std::string e = readWith(restoring(keys.privateKey));
    EXPECT_THAT(e, HasSubstr(std::string(formats::kSealImageName) + " is missing"));
    EXPECT_THAT(e, HasSubstr("content-private-key"));
    EXPECT_THAT(e, HasSubstr("content-allow-plaintext"));
    formats::SealOptions plain = restoring(keys.privateKey);
    plain.allowPlaintext = true;
    EXPECT_EQ(readWith(plain), "restored");
    EXPECT_EQ(readWith(restoring("")), "restored") << "without a key, the clear is read";
}

// Contents that are never sealed (CRIU's pages files, a file under an unpacked name) are refused
// where a private key is set, whatever the metadata says of their layout.
TEST_F(SealedKeys, GivenAPrivateKey_ContentsUnderAnUnpackedNameAreRefusedWithOrWithoutAKeyImage) {
    std::string pages = "amdgpu-pages-1-1000.img";
    putFileBytes(dir + "/" + pages, std::string(8, '\0'));
    EXPECT_THAT(readWith(restoring(keys.privateKey), pages), HasSubstr("is missing"));
    write(*store(dir, dumping()), data);
    EXPECT_THAT(readWith(restoring(keys.privateKey), pages), HasSubstr("is not"));
}

// Every level of a chain: a parent whose key image was deleted is refused from the child.
TEST_F(SealedKeys, GivenAPrivateKey_AParentWithoutItsKeyImageIsRefusedFromTheChild) {
    std::string childDir = root / "child";
    fs::create_directories(childDir);
    write(*store(dir, dumping()), data);
    auto child = store(childDir, dumping());
    ASSERT_TRUE(child->contentKeys().prepareDump(*child, std::string("../ck")).ok());
    fs::remove(dir + "/" + formats::kSealImageName);
    replaceWithPlaintext();
    auto s = store(childDir, restoring(keys.privateKey));
    ASSERT_TRUE(s->contentKeys().keysOf(*s, "").ok());
    auto parent = formats::openContentsImage(*s, "../ck/" + name);
    ASSERT_FALSE(parent.ok());
    EXPECT_THAT(parent.error().describe(), HasSubstr("../ck/amdgpu-seal.img is missing"));
}

using testsupport::hasFlag;
using testsupport::vmFlagsAt;

TEST(SecretBytes, KeyMaterialIsLeftOutOfCoreDumpsAndZeroedWhenDropped) {
    std::byte* at = nullptr;
    size_t size = 4096;
    {
        auto secret = formats::SecretBytes::allocate(100);
        ASSERT_TRUE(secret.ok()) << secret.error().describe();
        std::fill(secret->bytes().begin(), secret->bytes().end(), std::byte{0xab});
        at = secret->data();
        std::string flags = vmFlagsAt(at);
        ASSERT_FALSE(flags.empty()) << "no mapping of smaps holds the key";
        EXPECT_TRUE(hasFlag(flags, "dd")) << flags;
    }
    // Dropped: its pages are kept for the next key, zeroed, still out of core dumps.
    EXPECT_TRUE(std::all_of(at, at + size, [](std::byte b) { return b == std::byte{0}; }));
    EXPECT_TRUE(hasFlag(vmFlagsAt(at), "dd"));
}

TEST(SecretBytes, ACheckpointsKeysLiveInKeyMaterialsMemory) {
    formats::MasterKey master{};
    master[0] = std::byte{1};
    auto keys =
        formats::SealKeys::derive(formats::Cipher::Aes256Gcm, master, formats::CheckpointId{});
    ASSERT_TRUE(keys.ok()) << keys.error().describe();
    EXPECT_TRUE(hasFlag(vmFlagsAt((*keys)->aeadKey().data()), "dd"));
    EXPECT_TRUE(hasFlag(vmFlagsAt((*keys)->master().data()), "dd"));
}

TEST_F(SealedKeys, APrivateKeyOthersMayReadOrWriteIsRefusedNamingTheFileAndItsMode) {
    for (mode_t mode : {0640, 0604, 0620, 0602}) {
        chmod(keys.privateKey.c_str(), mode);
        auto key = formats::PrivateKey::load(keys.privateKey, "content-private-key");
        ASSERT_FALSE(key.ok()) << std::oct << mode;
        EXPECT_THAT(key.error().describe(), HasSubstr(keys.privateKey));
        char text[8];
        snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode));
        EXPECT_THAT(key.error().describe(), HasSubstr(std::string("mode ") + text));
        EXPECT_THAT(key.error().describe(), HasSubstr("content-private-key"));
    }
    for (mode_t mode : {0600, 0400}) {
        chmod(keys.privateKey.c_str(), mode);
        auto key = formats::PrivateKey::load(keys.privateKey, "content-private-key");
        EXPECT_TRUE(key.ok()) << key.error().describe();
    }
}

TEST_F(SealedKeys, AnRsaKeyUnder2048BitsIsRefusedNamingItsSize) {
    auto small = testsupport::writeTestKeys(keysDir.path(), 2, "small", 1024);
    auto cert = formats::loadCertificate(small.certificate, "content-certificate");
    ASSERT_FALSE(cert.ok());
    EXPECT_THAT(cert.error().describe(), HasSubstr("1024 bits"));
    EXPECT_THAT(cert.error().describe(), HasSubstr(small.certificate));
    auto key = formats::PrivateKey::load(small.privateKey, "content-private-key");
    ASSERT_FALSE(key.ok());
    EXPECT_THAT(key.error().describe(), HasSubstr("1024 bits"));
    EXPECT_THAT(key.error().describe(), HasSubstr(small.privateKey));
}

} // namespace
