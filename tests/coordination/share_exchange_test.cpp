// The share exchange: restored tasks (forks of one process) hand each other fds of the memory
// they share, through an fdstore and a table in shared memory.

#include "coordination/share_exchange.h"

#include "fork_fdstore.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

namespace {

using namespace std::chrono_literals;
using testing::HasSubstr;

using testsupport::ForkSharedFdStore;

/// A file of `bytes` in `dir`, opened read-write.
int makeFile(const testsupport::TempDir& dir, const std::string& name, const std::string& bytes) {
    std::string path = dir / name;
    std::ofstream(path) << bytes;
    return open(path.c_str(), O_RDWR | O_CLOEXEC);
}

ino_t inodeOf(int fd) {
    struct stat st {};
    return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

TEST(LocalShareExchange, GivenPublishedKey_WhenFetch_ThenAnFdOfTheSameFile) {
    testsupport::TempDir dir;
    int fd = makeFile(dir, "bo", "memory");
    ASSERT_GE(fd, 0);
    auto exchange = coordination::makeLocalShareExchange();
    ASSERT_TRUE(exchange->publish(7, fd).ok());
    close(fd); // the exchange keeps its own

    auto fetched = exchange->fetch(7, 0ms, "BO 1");

    ASSERT_TRUE(fetched.ok()) << fetched.error().describe();
    struct stat st {};
    ASSERT_EQ(stat((dir / "bo").c_str(), &st), 0);
    EXPECT_EQ(inodeOf(*fetched), st.st_ino);
    close(*fetched);
}

TEST(LocalShareExchange, GivenUnpublishedKey_WhenFetch_ThenItSaysTheMemoryIsAnotherProcesss) {
    auto exchange = coordination::makeLocalShareExchange();

    auto fetched = exchange->fetch(0x42, 10s, "BO 3 of amdgpu-renderD-5.img");

    ASSERT_FALSE(fetched.ok());
    EXPECT_EQ(fetched.error().code(), base::ErrorCode::NotSupported);
    EXPECT_THAT(fetched.error().describe(), HasSubstr("BO 3 of amdgpu-renderD-5.img"));
    EXPECT_THAT(fetched.error().describe(), HasSubstr("fdstore"));
}

TEST(TaskShareExchange, GivenKeyPublishedTwice_WhenFetch_ThenTheFirstFdIsKept) {
    testsupport::TempDir dir;
    ForkSharedFdStore fdstore;
    ASSERT_TRUE(fdstore.ok());
    auto exchange = coordination::makeTaskShareExchange(fdstore.store(), 8);
    ASSERT_TRUE(exchange.ok()) << exchange.error().describe();
    int first = makeFile(dir, "first", "a");
    int second = makeFile(dir, "second", "b");
    ASSERT_TRUE((*exchange)->publish(1, first).ok());
    ASSERT_TRUE((*exchange)->publish(1, second).ok());

    auto fetched = (*exchange)->fetch(1, 0ms, "BO 1");

    ASSERT_TRUE(fetched.ok()) << fetched.error().describe();
    EXPECT_EQ(inodeOf(*fetched), inodeOf(first));
    for (int fd : {first, second, *fetched})
        close(fd);
}

TEST(TaskShareExchange, GivenNoOwner_WhenFetch_ThenItWaitsTheTimeoutAndNamesTheBoAndKey) {
    ForkSharedFdStore fdstore;
    ASSERT_TRUE(fdstore.ok());
    auto exchange = coordination::makeTaskShareExchange(fdstore.store(), 8);
    ASSERT_TRUE(exchange.ok());
    auto t0 = std::chrono::steady_clock::now();

    auto fetched = (*exchange)->fetch(0xabc, 300ms, "BO 2 of amdgpu-renderD-9.img");

    EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
    ASSERT_FALSE(fetched.ok());
    EXPECT_EQ(fetched.error().code(), base::ErrorCode::NotFound);
    EXPECT_THAT(fetched.error().describe(), HasSubstr("BO 2 of amdgpu-renderD-9.img"));
    EXPECT_THAT(fetched.error().describe(), HasSubstr("0xabc"));
    EXPECT_THAT(fetched.error().describe(), HasSubstr("part of the same restore"));
}

TEST(TaskShareExchange, GivenFullTable_WhenPublish_ThenOutOfMemoryNamingTheKey) {
    testsupport::TempDir dir;
    ForkSharedFdStore fdstore;
    ASSERT_TRUE(fdstore.ok());
    auto exchange = coordination::makeTaskShareExchange(fdstore.store(), 2);
    ASSERT_TRUE(exchange.ok());
    int fd = makeFile(dir, "bo", "x");
    ASSERT_TRUE((*exchange)->publish(1, fd).ok());
    ASSERT_TRUE((*exchange)->publish(2, fd).ok());

    auto third = (*exchange)->publish(3, fd);

    ASSERT_FALSE(third.ok());
    EXPECT_EQ(third.error().code(), base::ErrorCode::OutOfMemory);
    EXPECT_THAT(third.error().describe(), HasSubstr("0x3"));
    close(fd);
}

TEST(
    TaskShareExchange,
    GivenForkedTasks_WhenTheImporterAsksBeforeTheOwnerPublishes_ThenItWaitsAndGetsTheOwnersMemory) {
    testsupport::TempDir dir;
    ForkSharedFdStore fdstore;
    ASSERT_TRUE(fdstore.ok());
    auto made = coordination::makeTaskShareExchange(fdstore.store());
    ASSERT_TRUE(made.ok());
    coordination::ShareExchange& exchange = **made;
    int done[2];
    ASSERT_EQ(pipe(done), 0);

    // The importer: fetches key 5 (published later), writes through the fd it gets.
    pid_t importer = fork();
    ASSERT_GE(importer, 0);
    if (importer == 0) {
        auto fd = exchange.fetch(5, 20s, "BO 1");
        if (!fd.ok()) {
            fprintf(stderr, "%s\n", fd.error().describe().c_str());
            _exit(2);
        }
        _exit(pwrite(*fd, "written by the importer", 23, 0) == 23 ? 0 : 3);
    }
    // The owner: publishes its file after a while, then stays until the importer is done.
    pid_t owner = fork();
    ASSERT_GE(owner, 0);
    if (owner == 0) {
        close(done[1]);
        std::this_thread::sleep_for(200ms);
        int fd = open((dir / "owned").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0 || !exchange.publish(5, fd).ok())
            _exit(2);
        char c;
        (void)!read(done[0], &c, 1); // until the parent closes the pipe
        _exit(0);
    }
    close(done[0]);
    int status = 0;
    ASSERT_EQ(waitpid(importer, &status, 0), importer);
    close(done[1]);
    int ownerStatus = 0;
    ASSERT_EQ(waitpid(owner, &ownerStatus, 0), owner);

    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_TRUE(WIFEXITED(ownerStatus) && WEXITSTATUS(ownerStatus) == 0);
    std::ifstream in(dir / "owned");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, "written by the importer");
}

} // namespace
