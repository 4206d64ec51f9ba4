// The certificate and private key of an encrypted checkpoint are read only from a regular file on
// a trusted path (issue 53): a FIFO or device node named as a key is refused at once, without
// being opened (no writer waited for, no driver called), naming the option, the path and what it
// is; a key file reached through a link in a directory others may write is refused.
#include "formats/seal_image.h"
#include "open_watch.h"
#include "temp_dir.h"
#include "test_keys.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>

namespace {

using ::testing::HasSubstr;

struct KeyFile : ::testing::Test {
    testsupport::TempDir dir;
    testsupport::KeyFiles keys = testsupport::writeTestKeys(dir.path(), 0);

    /// Replaces `path` with a FIFO.
    void makeFifo(const std::string& path) {
        ASSERT_EQ(unlink(path.c_str()), 0);
        ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
    }
};

TEST_F(KeyFile, GivenTheKeysAsWritten_ThenBothLoad) {
    auto certificate = formats::loadCertificate(keys.certificate, "content-certificate");
    EXPECT_TRUE(certificate.ok()) << certificate.error().describe();
    auto key = formats::PrivateKey::load(keys.privateKey, "content-key");
    EXPECT_TRUE(key.ok()) << key.error().describe();
}

TEST_F(KeyFile, GivenAFifoAsTheCertificate_ThenItIsRefusedUnopened) {
    makeFifo(keys.certificate);
    testsupport::OpenWatch watch(dir.path());

    auto certificate = formats::loadCertificate(keys.certificate, "content-certificate");

    ASSERT_FALSE(certificate.ok());
    EXPECT_THAT(certificate.error().describe(),
                HasSubstr("content-certificate '" + keys.certificate +
                          "' is not a regular file (it is a FIFO)"));
    EXPECT_FALSE(watch.opened("content.crt"));
}

TEST_F(KeyFile, GivenAFifoAsThePrivateKey_ThenItIsRefusedUnopened) {
    makeFifo(keys.privateKey);
    testsupport::OpenWatch watch(dir.path());

    auto key = formats::PrivateKey::load(keys.privateKey, "content-key");

    ASSERT_FALSE(key.ok());
    EXPECT_THAT(key.error().describe(), HasSubstr("content-key '" + keys.privateKey +
                                                  "' is not a regular file (it is a FIFO)"));
    EXPECT_FALSE(watch.opened("content.key"));
}

TEST_F(KeyFile, GivenADeviceNodeAsThePrivateKey_ThenItsDriverIsNeverOpened) {
    if (geteuid() != 0)
        GTEST_SKIP() << "making a device node needs root";
    ASSERT_EQ(unlink(keys.privateKey.c_str()), 0);
    ASSERT_EQ(mknod(keys.privateKey.c_str(), S_IFCHR | 0600, makedev(1, 5)), 0); // /dev/zero's
    testsupport::OpenWatch watch(dir.path());

    auto key = formats::PrivateKey::load(keys.privateKey, "content-key");

    ASSERT_FALSE(key.ok());
    EXPECT_THAT(key.error().describe(),
                HasSubstr("content-key '" + keys.privateKey +
                          "' is not a regular file (it is a character device)"));
    EXPECT_FALSE(watch.opened("content.key"));
}

TEST_F(KeyFile, GivenALinkToTheKeyInADirectoryOthersMayWrite_ThenItIsRefused) {
    std::string open = dir / "open";
    ASSERT_EQ(mkdir(open.c_str(), 0700), 0);
    ASSERT_EQ(chmod(open.c_str(), 0777), 0);
    std::string link = open + "/content.key";
    ASSERT_EQ(symlink(keys.privateKey.c_str(), link.c_str()), 0);

    auto key = formats::PrivateKey::load(link, "content-key");

    ASSERT_FALSE(key.ok());
    EXPECT_THAT(key.error().describe(),
                HasSubstr("content-key '" + link + "': its directory '" + open +
                          "' is writable by group or others (mode 0777)"));
}

} // namespace
