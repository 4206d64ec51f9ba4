// Signed checkpoints (checkpoint-signing-key, trusted-certificates): a signed directory verifies
// (RSA-PSS and ECDSA); it is refused, naming what is wrong, after a file of criu's or ours is
// changed, a file is added or removed, the manifest is removed or edited, when it was signed by
// a key that is not trusted (a forgery made with only the trusted certificate), and when a
// signed parent of its chain is changed. Keys that may not sign are refused.
#include "formats/checkpoint_signing.h"

#include "temp_dir.h"
#include "test_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace {
using ::testing::HasSubstr;
using testsupport::TempDir;
using testsupport::writeFile;

/// A P-256 key and a certificate it signs itself, PEM, written as DIR/ec.key and DIR/ec.crt.
testsupport::KeyFiles writeEcKeys(const std::string& dir) {
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 7);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
    X509_set_pubkey(cert, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("ec signer"), -1, -1, 0);
    X509_set_issuer_name(cert, X509_get_subject_name(cert));
    X509_sign(cert, key, EVP_sha256());
    testsupport::KeyFiles files{dir + "/ec.crt", dir + "/ec.key"};
    FILE* f = fopen(files.privateKey.c_str(), "w");
    PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    fclose(f);
    f = fopen(files.certificate.c_str(), "w");
    PEM_write_X509(f, cert);
    fclose(f);
    chmod(files.privateKey.c_str(), 0600);
    X509_free(cert);
    EVP_PKEY_free(key);
    return files;
}

class CheckpointSigningTest : public ::testing::Test {
protected:
    void SetUp() override {
        keys_ = testsupport::writeTestKeys(keyDir_.path(), 0, "node");
        other_ = testsupport::writeTestKeys(keyDir_.path(), 1, "stranger");
        dir_ = ckpt_ / "c1";
        mkdir(dir_.c_str(), 0755);
        writeFile(dir_ + "/inventory.img", "criu inventory");
        writeFile(dir_ + "/pages-1.img", std::string(10000, 'p'));
        writeFile(dir_ + "/amdgpu-kfd-7.img", "our metadata");
        writeFile(dir_ + "/dump.log", "criu's log, written on");
    }
    int openDir(const std::string& path) {
        int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        EXPECT_GE(fd, 0) << path;
        fds_.push_back(fd);
        return fd;
    }
    void TearDown() override {
        for (int fd : fds_)
            close(fd);
    }
    formats::ManifestSigner signer(const testsupport::KeyFiles& k) {
        auto s = formats::ManifestSigner::load(k.privateKey, k.certificate);
        EXPECT_TRUE(s.ok()) << s.error().describe();
        return *s;
    }
    void sign(const std::string& dir, const testsupport::KeyFiles& k) {
        auto r = formats::signCheckpoint(openDir(dir), dir, signer(k));
        ASSERT_TRUE(r.ok()) << r.error().describe();
    }
    /// The check of `dir` with the node's certificate trusted: "" when it passes.
    std::string refusal(const std::string& dir, const std::string& trusted = "") {
        auto trust = formats::TrustedSigners::load(trusted.empty() ? keys_.certificate : trusted);
        EXPECT_TRUE(trust.ok()) << trust.error().describe();
        auto r = formats::verifyCheckpoint(openDir(dir), dir, *trust);
        return r.ok() ? "" : r.error().describe();
    }

    TempDir keyDir_, ckpt_;
    testsupport::KeyFiles keys_, other_;
    std::string dir_;
    std::vector<int> fds_;
};

TEST_F(CheckpointSigningTest, SignedCheckpointVerifiesAndLogsMayChange) {
    sign(dir_, keys_);
    EXPECT_EQ(refusal(dir_), "");
    // criu writes its logs and statistics in the directory after the dump and at the restore.
    writeFile(dir_ + "/dump.log", "more of criu's log");
    writeFile(dir_ + "/restore.log", "criu restores");
    writeFile(dir_ + "/stats-restore", "stats");
    auto trust = formats::TrustedSigners::load(keys_.certificate);
    auto r = formats::verifyCheckpoint(openDir(dir_), dir_, *trust);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->entries, 3u);
    EXPECT_EQ(r->levels, 1u);
    EXPECT_THAT(r->signer, HasSubstr("criu-amdgpu test 0"));
}

TEST_F(CheckpointSigningTest, EcdsaSignsToo) {
    auto ec = writeEcKeys(keyDir_.path());
    ASSERT_EQ(signer(ec).scheme(), formats::SignatureScheme::EcdsaSha256);
    EXPECT_EQ(signer(keys_).scheme(), formats::SignatureScheme::RsaPssSha256);
    sign(dir_, ec);
    EXPECT_EQ(refusal(dir_, ec.certificate), "");
    EXPECT_THAT(refusal(dir_), HasSubstr("signed by a certificate that is not trusted"));
}

TEST_F(CheckpointSigningTest, ACriuImageChangedIsNamed) {
    sign(dir_, keys_);
    ASSERT_TRUE(testsupport::flipByte(dir_ + "/pages-1.img", 5000));
    EXPECT_THAT(refusal(dir_), HasSubstr("pages-1.img: changed since the checkpoint was signed "
                                         "(its SHA-256 differs)"));
}

TEST_F(CheckpointSigningTest, OurImageChangedIsNamed) {
    sign(dir_, keys_);
    writeFile(dir_ + "/amdgpu-kfd-7.img", "our metadata, longer");
    EXPECT_THAT(refusal(dir_), HasSubstr("amdgpu-kfd-7.img: changed since the checkpoint was "
                                         "signed (20 bytes, signed with 12)"));
}

TEST_F(CheckpointSigningTest, AFileAddedIsNamedEscaped) {
    sign(dir_, keys_);
    writeFile(dir_ + "/evil\nname \x1b[2J", "x");
    EXPECT_THAT(refusal(dir_),
                HasSubstr("evil%0aname%20%1b[2J: added after the checkpoint was signed"));
}

TEST_F(CheckpointSigningTest, AFileRemovedIsNamed) {
    sign(dir_, keys_);
    ASSERT_EQ(unlink((dir_ + "/inventory.img").c_str()), 0);
    EXPECT_THAT(refusal(dir_), HasSubstr("inventory.img: removed after the checkpoint was signed"));
}

TEST_F(CheckpointSigningTest, AnUnsignedCheckpointIsRefused) {
    sign(dir_, keys_);
    ASSERT_EQ(unlink((dir_ + "/amdgpu-manifest.img").c_str()), 0);
    EXPECT_THAT(refusal(dir_), HasSubstr("amdgpu-manifest.img: missing: the checkpoint is not "
                                         "signed"));
}

TEST_F(CheckpointSigningTest, AStrangersSignatureIsRefused) {
    sign(dir_, other_);
    EXPECT_THAT(refusal(dir_), HasSubstr("signed by a certificate that is not trusted "
                                         "(SHA-256 fingerprint "));
    EXPECT_THAT(refusal(dir_), HasSubstr("criu-amdgpu test 1"));
}

TEST_F(CheckpointSigningTest, AForgeryWithOnlyTheTrustedCertificateIsRefused) {
    // The attacker has the node's certificate (public) and a key of their own.
    writeFile(dir_ + "/pages-1.img", "the attacker's pages");
    auto manifest = formats::scanCheckpointDirectory(openDir(dir_), dir_);
    ASSERT_TRUE(manifest.ok());
    formats::SignedManifest forged;
    forged.body = formats::encodeManifestBody(*manifest);
    forged.certificate = signer(keys_).certificate(); // the DER of the public certificate
    auto signature = signer(other_).sign(formats::signedPart(forged));
    ASSERT_TRUE(signature.ok());
    forged.signature = *signature;
    writeFile(dir_ + "/amdgpu-manifest.img", formats::encodeSignedManifest(forged));
    EXPECT_THAT(refusal(dir_), HasSubstr("amdgpu-manifest.img: its signature does not verify "
                                         "with the trusted certificate it names"));
}

TEST_F(CheckpointSigningTest, AManifestEditedAfterSigningIsRefused) {
    sign(dir_, keys_);
    writeFile(dir_ + "/pages-1.img", "the attacker's pages");
    // The attacker rewrites the manifest's line of pages-1.img to describe the new file.
    auto stored =
        formats::decodeSignedManifest(testsupport::readFile(dir_ + "/amdgpu-manifest.img"), "m");
    ASSERT_TRUE(stored.ok());
    auto now = formats::scanCheckpointDirectory(openDir(dir_), dir_);
    ASSERT_TRUE(now.ok());
    ASSERT_NE(stored->body, formats::encodeManifestBody(*now));
    stored->body = formats::encodeManifestBody(*now);
    writeFile(dir_ + "/amdgpu-manifest.img", formats::encodeSignedManifest(*stored));
    EXPECT_THAT(refusal(dir_), HasSubstr("its signature does not verify"));
}

TEST_F(CheckpointSigningTest, EveryLevelOfAChainIsChecked) {
    std::string child = ckpt_ / "c2";
    mkdir(child.c_str(), 0755);
    writeFile(child + "/pages-1.img", "child pages");
    ASSERT_EQ(symlink("../c1", (child + "/parent").c_str()), 0);
    sign(dir_, keys_);
    sign(child, keys_);
    auto trust = formats::TrustedSigners::load(keys_.certificate);
    auto r = formats::verifyCheckpoint(openDir(child), child, *trust);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->levels, 2u);
    ASSERT_TRUE(testsupport::flipByte(dir_ + "/pages-1.img", 1));
    EXPECT_THAT(refusal(child), HasSubstr("c2/parent (../c1): does not hold what its signed "
                                          "manifest lists: pages-1.img: changed"));
    // The link itself is signed: pointing it elsewhere is named.
    ASSERT_EQ(unlink((child + "/parent").c_str()), 0);
    ASSERT_EQ(symlink("../c3", (child + "/parent").c_str()), 0);
    EXPECT_THAT(refusal(child), HasSubstr("parent: the link leads to ../c3, it was signed "
                                          "leading to ../c1"));
}

TEST_F(CheckpointSigningTest, ADirectoryOrFifoCannotBeSigned) {
    ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
    auto r = formats::signCheckpoint(openDir(dir_), dir_, signer(keys_));
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("/fifo: neither a regular file nor a link"));
}

TEST_F(CheckpointSigningTest, KeysThatMayNotSignAreRefused) {
    chmod(keys_.privateKey.c_str(), 0640);
    auto readable = formats::ManifestSigner::load(keys_.privateKey, keys_.certificate);
    ASSERT_FALSE(readable.ok());
    EXPECT_THAT(readable.error().describe(),
                HasSubstr("readable by others than its owner (mode 640"));
    chmod(keys_.privateKey.c_str(), 0600);
    auto mismatched = formats::ManifestSigner::load(keys_.privateKey, other_.certificate);
    ASSERT_FALSE(mismatched.ok());
    EXPECT_THAT(mismatched.error().describe(),
                HasSubstr("is not the key of checkpoint-signing-certificate"));
    writeFile(keyDir_ / "empty.pem", "no certificate");
    auto empty = formats::TrustedSigners::load(keyDir_ / "empty.pem");
    ASSERT_FALSE(empty.ok());
    EXPECT_THAT(empty.error().describe(), HasSubstr("empty.pem: no certificate in it"));
}

TEST_F(CheckpointSigningTest, ADirectoryOfCertificatesIsTrusted) {
    std::string trusted = keyDir_ / "trusted";
    mkdir(trusted.c_str(), 0755);
    writeFile(trusted + "/a.pem", testsupport::readFile(other_.certificate));
    writeFile(trusted + "/b.pem", testsupport::readFile(keys_.certificate));
    sign(dir_, keys_);
    EXPECT_EQ(refusal(dir_, trusted), "");
}

TEST(ManifestBodyTest, MalformedBodiesAreRefusedNamingTheLine) {
    formats::Manifest m;
    formats::ManifestEntry a;
    a.name = "a b";
    a.size = 3;
    m.entries.push_back(a);
    std::string body = formats::encodeManifestBody(m);
    auto back = formats::decodeManifestBody(body, "f");
    ASSERT_TRUE(back.ok()) << back.error().describe();
    EXPECT_EQ(*back, m);
    for (std::string bad :
         {body + body.substr(body.find('\n') + 1), body.substr(0, body.size() - 1),
          body + "file 1 00 x\n", body + "file 1 " + std::string(64, '0') + " ../x\n",
          body + "file 1 " + std::string(64, '0') + " %2fetc\n",
          body + "file 1 " + std::string(64, '0') + " amdgpu-manifest.img\n"}) {
        auto r = formats::decodeManifestBody(bad, "f");
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_THAT(r.error().describe(), HasSubstr("f: line "));
    }
}

} // namespace
