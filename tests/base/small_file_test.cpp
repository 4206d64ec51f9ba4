#include "base/small_file.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

class SmallFile : public ::testing::Test {
protected:
    void SetUp() override {
        path_ = std::filesystem::temp_directory_path() /
                ("small_file_test_" + std::to_string(::getpid()));
        std::ofstream(path_, std::ios::binary)
            << std::string(10000, 'a') << std::string(5, '\0') << "end";
    }
    void TearDown() override { std::filesystem::remove(path_); }
    std::filesystem::path path_;
};

TEST_F(SmallFile, GivenAFileLongerThanOneRead_ThenEveryByteNulsIncluded) {
    auto text = base::readSmallFile(path_, 1 << 20);
    ASSERT_TRUE(text);
    EXPECT_EQ(*text, std::string(10000, 'a') + std::string(5, '\0') + "end");
}

TEST_F(SmallFile, GivenALimit_ThenNoMoreThanItIsRead) {
    auto text = base::readSmallFile(path_, 4100);
    ASSERT_TRUE(text);
    EXPECT_EQ(*text, std::string(4100, 'a'));
}

TEST_F(SmallFile, GivenAMissingFile_ThenNothing) {
    EXPECT_FALSE(base::readSmallFile(path_.string() + ".missing", 100));
}

} // namespace
