// Image stores: a directory (by path or fd) and criu's image streamer.
#include "formats/image_store.h"

#include "image_streamer.h"
#include "page_cache.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

using base::ErrorCode;
using ::testing::HasSubstr;
using testsupport::TempDir;

std::span<const std::byte> bytesOf(const std::string& s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

std::string readAll(formats::ImageReader& reader, size_t n) {
    std::string out(n, '\0');
    auto r = reader.readExact(std::as_writable_bytes(std::span(out.data(), out.size())));
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().describe());
    return out;
}

TEST(DirectoryStore, GivenAClosedWriter_WhenReadBack_ThenTheBytesAndSizeMatch) {
    TempDir dir;
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    auto writer = (*store)->openWrite("a.img");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->write(bytesOf("hello ")).ok());
    ASSERT_TRUE((*writer)->write(bytesOf("world")).ok());
    EXPECT_EQ((*writer)->written(), 11u);
    ASSERT_TRUE((*writer)->close().ok());

    auto reader = (*store)->openRead("a.img");

    ASSERT_TRUE(reader.ok());
    EXPECT_EQ((*reader)->size(), 11);
    EXPECT_EQ((*reader)->name(), "a.img");
    EXPECT_EQ(readAll(**reader, 11), "hello world");
    EXPECT_EQ(testsupport::readFile(dir / "a.img"), "hello world");
}

TEST(DirectoryStore,
     GivenAFile_WhenBytesAreSkipped_ThenTheNextReadIsPastThemAndSkippingPastTheEndFails) {
    TempDir dir;
    testsupport::writeFile(dir / "a.img", "hello world");
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    auto reader = (*store)->openRead("a.img");
    ASSERT_TRUE(reader.ok());
    EXPECT_EQ(readAll(**reader, 2), "he");
    ASSERT_TRUE((*reader)->skip(4).ok());
    EXPECT_EQ(readAll(**reader, 3), "wor");
    auto past = (*reader)->skip(3);
    ASSERT_FALSE(past.ok());
    EXPECT_EQ(past.error().code(), base::ErrorCode::Image);
    EXPECT_NE(past.error().message().find("a.img"), std::string::npos) << past.error().message();
    ASSERT_TRUE((*reader)->skip(2).ok()) << "a failed skip moved nothing";
    EXPECT_TRUE((*reader)->atEnd().value());
}

// A restore asks for the next image's first bytes before it opens it: they are fetched into the
// page cache, not the rest of the file; an image that is not there is passed over, for the
// openRead that follows to report.
TEST(DirectoryStore, GivenAnImageNotInThePageCache_WhenReadAhead_ThenItsFirstBytesAreFetched) {
    constexpr uint64_t kMiB = 1 << 20, kImage = 40 * kMiB, kAsked = 12 * kMiB;
    TempDir dir = testsupport::pageCacheDir();
    std::string path = dir / "amdgpu-pages-1-1000.img";
    ASSERT_TRUE(testsupport::writeUncached(path, kImage));
    ASSERT_LT(testsupport::cachedBytes(path, kImage), kImage / 8)
        << dir.path() << " keeps its files' pages: nothing here can show what is fetched";
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok()) << store.error().message();
    (*store)->readAhead("missing.img", kAsked);
    (*store)->readAhead("amdgpu-pages-1-1000.img", kAsked);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (testsupport::cachedBytes(path, kAsked) < kAsked &&
           std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(testsupport::cachedBytes(path, kAsked), kAsked);
    EXPECT_LT(testsupport::cachedBytes(path, kImage), kImage / 2) << "the whole file was fetched";
}

TEST(DirectoryStore, GivenADirectoryFd_WhenStoreOpened_ThenTheCallerKeepsItsFdAndImagesGoThere) {
    TempDir dir;
    int fd = open(dir.path().c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0);
    {
        auto store = formats::openDirectoryStore(fd, "criu image dir");
        ASSERT_TRUE(store.ok());
        EXPECT_EQ((*store)->describe(), "criu image dir");
        auto writer = (*store)->openWrite("b.img");
        ASSERT_TRUE(writer.ok());
        ASSERT_TRUE((*writer)->write(bytesOf("x")).ok());
        ASSERT_TRUE((*writer)->close().ok());
    }
    // The store dup'ed the fd: ours is still open after the store is gone.
    EXPECT_NE(fcntl(fd, F_GETFD), -1);
    close(fd);
    EXPECT_EQ(testsupport::readFile(dir / "b.img"), "x");
}

TEST(DirectoryStore, GivenAWriterDestroyedWithoutClose_WhenTheDirectoryIsListed_ThenNoFileRemains) {
    TempDir dir;
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    {
        auto writer = (*store)->openWrite("partial.img");
        ASSERT_TRUE(writer.ok());
        ASSERT_TRUE((*writer)->write(bytesOf("half of it")).ok());
    }

    EXPECT_FALSE(std::filesystem::exists(dir / "partial.img"));
    EXPECT_FALSE((*store)->exists("partial.img"));
}

TEST(DirectoryStore, GivenAWriterThatOutlivesItsStore_WhenDestroyedWithoutClose_ThenNoFileRemains) {
    TempDir dir;
    std::unique_ptr<formats::ImageWriter> writer;
    {
        auto store = formats::openDirectoryStore(dir.path());
        ASSERT_TRUE(store.ok());
        auto w = (*store)->openWrite("orphan.img");
        ASSERT_TRUE(w.ok());
        writer = std::move(*w);
        ASSERT_TRUE(writer->write(bytesOf("half of it")).ok());
    }

    writer.reset();

    EXPECT_FALSE(std::filesystem::exists(dir / "orphan.img"));
}

TEST(DirectoryStore, GivenAClosedWriter_WhenWrittenOrClosedAgain_ThenPhaseOrder) {
    TempDir dir;
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    auto writer = (*store)->openWrite("c.img");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->close().ok());

    auto w = (*writer)->write(bytesOf("late"));
    auto c = (*writer)->close();

    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.error().code(), ErrorCode::PhaseOrder);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().code(), ErrorCode::PhaseOrder);
    EXPECT_TRUE(std::filesystem::exists(dir / "c.img"));
}

TEST(DirectoryStore, GivenAMissingImage_WhenOpenedForRead_ThenNotFoundNamingItAndTheStore) {
    TempDir dir;
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());

    auto r = (*store)->openRead("missing.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NotFound);
    EXPECT_EQ(r.error().sysErrno(), ENOENT);
    EXPECT_THAT(r.error().describe(), HasSubstr("missing.img"));
    EXPECT_THAT(r.error().describe(), HasSubstr(dir.path()));
    EXPECT_FALSE((*store)->exists("missing.img"));
}

TEST(DirectoryStore, GivenAShortFile_WhenReadExactAskedForMore_ThenImageErrorNamingTheFile) {
    TempDir dir;
    testsupport::writeFile(dir / "short.img", "abc");
    auto store = formats::openDirectoryStore(dir.path());
    ASSERT_TRUE(store.ok());
    auto reader = (*store)->openRead("short.img");
    ASSERT_TRUE(reader.ok());
    std::vector<std::byte> buf(8);

    auto r = (*reader)->readExact(buf);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("short.img"));
    EXPECT_THAT(r.error().describe(), HasSubstr("truncated"));
}

TEST(DirectoryStore, GivenAPathThatIsNotADirectory_WhenOpened_ThenIoErrorNamingIt) {
    TempDir dir;
    testsupport::writeFile(dir / "file", "x");

    auto store = formats::openDirectoryStore(dir / "file");

    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.error().code(), ErrorCode::Io);
    EXPECT_EQ(store.error().sysErrno(), ENOTDIR);
    EXPECT_THAT(store.error().describe(), HasSubstr(dir / "file"));
}

TEST(DirectoryStore, GivenABadDirectoryFd_WhenOpened_ThenIoError) {
    auto store = formats::openDirectoryStore(-1, "nothing");

    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.error().code(), ErrorCode::Io);
    EXPECT_EQ(store.error().sysErrno(), EBADF);
}

/// A fake img_streamer_open: serves files of a temp dir, records each call.
struct FakeStreamer {
    TempDir dir;
    std::vector<std::pair<std::string, bool>> calls;

    formats::StreamerOpenFn fn() {
        return [this](const std::string& name, bool forWrite) -> int {
            calls.emplace_back(name, forWrite);
            int fd = forWrite ? open((dir / name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600)
                              : open((dir / name).c_str(), O_RDONLY);
            return fd < 0 ? -errno : fd;
        };
    }
};

TEST(StreamerStore, GivenAnImageWrittenThroughIt_WhenReadBack_ThenTheOpenFunctionSeesBothCalls) {
    FakeStreamer fake;
    auto dump = formats::makeStreamerStore(fake.fn(), formats::StreamDirection::Dump);
    auto writer = dump->openWrite("s.img");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->write(bytesOf("streamed")).ok());
    ASSERT_TRUE((*writer)->close().ok());
    auto store = formats::makeStreamerStore(fake.fn(), formats::StreamDirection::Restore);

    auto reader = store->openRead("s.img");

    ASSERT_TRUE(reader.ok());
    EXPECT_EQ(readAll(**reader, 2), "st");
    ASSERT_TRUE((*reader)->skip(3).ok()) << "a stream reads and drops what it skips";
    EXPECT_EQ(readAll(**reader, 3), "med");
    ASSERT_EQ(fake.calls.size(), 2u);
    EXPECT_EQ(fake.calls[0], std::make_pair(std::string("s.img"), true));
    EXPECT_EQ(fake.calls[1], std::make_pair(std::string("s.img"), false));
    EXPECT_EQ(store->describe(), "image streamer");
}

TEST(StreamerStore, GivenTheOpenFunctionSaysEnoent_WhenOpenedForRead_ThenNotFound) {
    auto store = formats::makeStreamerStore([](const std::string&, bool) { return -ENOENT; },
                                            formats::StreamDirection::Restore);

    auto r = store->openRead("absent.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NotFound);
    EXPECT_THAT(r.error().describe(), HasSubstr("absent.img"));
}

TEST(StreamerStore, GivenTheOpenFunctionFails_WhenOpenedForWrite_ThenIoErrorWithItsErrno) {
    auto store = formats::makeStreamerStore([](const std::string&, bool) { return -EPIPE; },
                                            formats::StreamDirection::Dump);

    auto r = store->openWrite("x.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Io);
    EXPECT_EQ(r.error().sysErrno(), EPIPE);
    EXPECT_THAT(r.error().describe(), HasSubstr("x.img"));
}

TEST(StreamerStore, GivenAPipe_WhenReaderAsksItsSize_ThenUnknown) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    close(fds[1]);
    auto store = formats::makeStreamerStore([&](const std::string&, bool) { return fds[0]; },
                                            formats::StreamDirection::Restore);

    auto reader = store->openRead("p.img");

    ASSERT_TRUE(reader.ok());
    EXPECT_EQ((*reader)->size(), -1);
}

} // namespace

// ------------------------------------------------- through a streamer speaking criu's protocol

class StreamerProtocol : public ::testing::Test {
protected:
    std::unique_ptr<testsupport::StreamerSession> serve(std::map<std::string, std::string> images) {
        auto s = testsupport::StreamerSession::start(dir_.path(), testsupport::StreamerMode::Serve,
                                                     std::move(images));
        EXPECT_TRUE(s.ok()) << s.error().describe();
        return s.ok() ? std::move(s).value() : nullptr;
    }
    TempDir dir_;
};

TEST_F(StreamerProtocol,
       GivenAnImageOfAnotherPlugin_WhenExistsIsAsked_ThenFalseAndTheStreamerIsAskedOnce) {
    auto s = serve({{"cuda-3.img", "theirs"}});

    EXPECT_FALSE(s->store->exists("amdgpu-kfd-3.img"));
    EXPECT_FALSE(s->store->exists("amdgpu-kfd-3.img"));
    auto r = s->store->openRead("amdgpu-kfd-3.img");

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::NotFound);
    std::vector<std::string> asked = s->streamer->requests();
    auto unread = s->finish();
    ASSERT_TRUE(unread.ok()) << unread.error().describe();
    EXPECT_EQ(asked, std::vector<std::string>{"-amdgpu-kfd-3.img"});
    EXPECT_EQ(unread->count("cuda-3.img"), 1u);
}

TEST_F(StreamerProtocol, GivenAnImageServedOnce_WhenExistsThenReadTwice_ThenBothReadsGetItsBytes) {
    auto s = serve({{"amdgpu-topology.img", "topology bytes"}});

    ASSERT_TRUE(s->store->exists("amdgpu-topology.img"));
    for (int round = 0; round < 2; ++round) {
        auto reader = s->store->openRead("amdgpu-topology.img");
        ASSERT_TRUE(reader.ok()) << reader.error().describe();
        EXPECT_EQ((*reader)->size(), 14);
        EXPECT_EQ(readAll(**reader, 14), "topology bytes");
        auto end = (*reader)->atEnd();
        ASSERT_TRUE(end.ok());
        EXPECT_TRUE(end.value());
    }
    EXPECT_EQ(s->streamer->requests(), std::vector<std::string>{"+amdgpu-topology.img"});
    ASSERT_TRUE(s->finish().ok());
}

TEST_F(StreamerProtocol, GivenAnImageLongerThanThePeek_WhenRead_ThenMemoryThenPipeGiveEveryByte) {
    std::string big(formats::kMaxStreamerPeekBytes + 4096 + 7, '\0');
    for (size_t i = 0; i < big.size(); ++i)
        big[i] = static_cast<char>((i * 131) >> 7);
    auto s = serve({{"big.img", big}});

    ASSERT_TRUE(s->store->exists("big.img"));
    auto reader = s->store->openRead("big.img");

    ASSERT_TRUE(reader.ok()) << reader.error().describe();
    EXPECT_EQ((*reader)->size(), -1) << "the rest is still in the pipe";
    EXPECT_TRUE(readAll(**reader, big.size()) == big);
    EXPECT_TRUE((*reader)->atEnd().value());
    reader->reset();
    EXPECT_FALSE(s->store->openRead("big.img").ok()) << "a streamed rest cannot be read twice";
    ASSERT_TRUE(s->finish().ok());
}

TEST_F(StreamerProtocol,
       GivenAStreamedDump_WhenAnImageIsAskedAbout_ThenFalseWithoutAskingTheStreamer) {
    auto s = testsupport::StreamerSession::start(dir_.path(), testsupport::StreamerMode::Capture);
    ASSERT_TRUE(s.ok()) << s.error().describe();

    EXPECT_FALSE((*s)->store->exists("amdgpu-topology.img"));
    auto read = (*s)->store->openRead("amdgpu-topology.img");

    ASSERT_FALSE(read.ok());
    EXPECT_THAT(read.error().describe(), HasSubstr("while criu streams a dump"));
    auto captured = (*s)->finish();
    ASSERT_TRUE(captured.ok()) << captured.error().describe();
    EXPECT_TRUE(captured->empty());
}

TEST_F(StreamerProtocol,
       GivenAStreamedRestore_WhenAnImageIsWritten_ThenRefusedWithoutAskingTheStreamer) {
    auto s = serve({});

    auto w = s->store->openWrite("x.img");

    ASSERT_FALSE(w.ok());
    EXPECT_THAT(w.error().describe(), HasSubstr("while criu streams a restore"));
    EXPECT_TRUE(s->streamer->requests().empty());
    ASSERT_TRUE(s->finish().ok());
}

TEST_F(StreamerProtocol, GivenAStreamedDump_WhenImagesAreWritten_ThenTheStreamerCapturesThemWhole) {
    auto s = testsupport::StreamerSession::start(dir_.path(), testsupport::StreamerMode::Capture);
    ASSERT_TRUE(s.ok()) << s.error().describe();
    auto a = (*s)->store->openWrite("a.img");
    auto b = (*s)->store->openWrite("b.img"); // two open at once, as criu does
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE((*a)->write(bytesOf("first ")).ok());
    ASSERT_TRUE((*b)->write(bytesOf("other")).ok());
    ASSERT_TRUE((*a)->write(bytesOf("image")).ok());
    ASSERT_TRUE((*a)->close().ok());
    ASSERT_TRUE((*b)->close().ok());

    auto captured = (*s)->finish();

    ASSERT_TRUE(captured.ok()) << captured.error().describe();
    EXPECT_EQ(*captured,
              (std::map<std::string, std::string>{{"a.img", "first image"}, {"b.img", "other"}}));
}
