#pragma once
/// \file
/// A fake of criu's image streamer (criu-image-streamer) and of criu's side of its protocol, for
/// tests that send images through the streamer instead of a directory. The protocol, from criu's
/// criu/img-streamer.c, criu/include/img-streamer.h and images/img-streamer.proto:
/// - criu connects to `<images dir>/streamer-capture.sock` to dump, `streamer-serve.sock` to
///   restore; one connection carries every request, under a lock.
/// - To open an image, criu sends a protobuf message framed as criu frames them (a host-endian
///   u32 size, then the message): img_streamer_request_entry { required string filename = 1 }.
/// - Restore only: the streamer answers img_streamer_reply_entry { required bool exists = 1 },
///   framed the same way; when false, img_streamer_open() returns -ENOENT.
/// - criu then makes a pipe and sends the streamer its end (SCM_RIGHTS, one byte of data),
///   keeping the other: at dump criu writes the image into it and closes it; at restore the
///   streamer writes the image and closes it.
/// And from criu-image-streamer: it serves each image once (then forgets it), and writes a
/// whole image into its pipe before it reads the next request; at capture it reads every pipe
/// as data arrives, so criu may write several images at once.

#include "base/result.h"
#include "formats/image_store.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace testsupport {

/// Which way images flow.
enum class StreamerMode { Capture, Serve };

/// `streamer-capture.sock` or `streamer-serve.sock`.
const char* streamerSocketName(StreamerMode mode);

/// The streamer: listens in an images directory and serves one criu connection on its thread.
class FakeImageStreamer {
public:
    /// Listens on the socket of `mode` in `dir`; in Serve mode it serves `images` (name ->
    /// bytes).
    static base::Result<std::unique_ptr<FakeImageStreamer>>
    start(const std::string& dir, StreamerMode mode,
          std::map<std::string, std::string> images = {});
    ~FakeImageStreamer();
    FakeImageStreamer(const FakeImageStreamer&) = delete;
    FakeImageStreamer& operator=(const FakeImageStreamer&) = delete;

    /// Waits for criu's side to close the connection (and, capturing, for every image to end).
    /// Returns the images captured, or those never asked for when serving; an error when the
    /// protocol was broken.
    base::Result<std::map<std::string, std::string>> finish();
    /// Every file name asked for, in order, with "+" when it was served and "-" when not.
    std::vector<std::string> requests();

private:
    FakeImageStreamer(StreamerMode mode, int listenFd, std::string socketPath,
                      std::map<std::string, std::string> images);
    void run();
    base::Result<void> serveConnection(int conn);
    void capture(std::string name, int pipeFd);

    StreamerMode mode_;
    int listenFd_;
    std::string socketPath_;
    std::mutex mutex_;
    std::map<std::string, std::string> images_;
    std::vector<std::string> requests_;
    std::vector<std::thread> pipeReaders_;
    std::thread thread_;
    std::string error_;
};

/// criu's side: img_streamer_init() and img_streamer_open() as criu implements them.
class CriuStreamerClient {
public:
    /// Connects to the socket of `mode` in `dir`.
    static base::Result<std::unique_ptr<CriuStreamerClient>> connect(const std::string& dir,
                                                                     StreamerMode mode);
    ~CriuStreamerClient();
    /// img_streamer_open(): an fd of the pipe, -ENOENT when the streamer has no such image, -1
    /// on other failures.
    int open(const std::string& name);
    /// The plugin's StreamerOpenFn over this client (what the frontend builds over criu's).
    formats::StreamerOpenFn openFn();
    /// Ends the connection (img_streamer_finish()).
    void close();

private:
    CriuStreamerClient(int fd, StreamerMode mode) : fd_(fd), mode_(mode) {}
    int fd_;
    StreamerMode mode_;
    std::mutex mutex_;
};

/// A streamer, criu's connection to it and the plugin's image store over that connection: what
/// a dump (Capture) or a restore (Serve) through criu's image streamer looks like to a backend.
struct StreamerSession {
    /// Starts a streamer in `dir` (serving `images` in Serve mode) and connects to it.
    static base::Result<std::unique_ptr<StreamerSession>>
    start(const std::string& dir, StreamerMode mode,
          std::map<std::string, std::string> images = {});
    /// Closes criu's connection and waits for the streamer: the images captured, or those never
    /// asked for.
    base::Result<std::map<std::string, std::string>> finish();

    std::unique_ptr<FakeImageStreamer> streamer;
    std::unique_ptr<CriuStreamerClient> client;
    std::unique_ptr<formats::ImageStore> store;
};

/// The images `dump` writes through a capture streamer started in `dir`.
base::Result<std::map<std::string, std::string>>
captureDump(const std::string& dir,
            const std::function<base::Result<void>(formats::ImageStore&)>& dump);

} // namespace testsupport
