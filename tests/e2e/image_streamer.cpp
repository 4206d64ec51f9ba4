// The fake image streamer of tests/support/image_streamer.h as a program, for criu --stream:
//   e2e-image-streamer capture IMAGES_DIR STORE_DIR   images criu dumps go into STORE_DIR
//   e2e-image-streamer serve IMAGES_DIR STORE_DIR     criu restores from the files of STORE_DIR
// It listens on IMAGES_DIR/streamer-{capture,serve}.sock, prints "ready" once it does, serves
// one criu run and exits 0 (1 when criu broke the protocol). Serving, it lists on stderr the
// images criu never asked for.
#include "image_streamer.h"

#include "temp_dir.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
    if (argc != 4 || (strcmp(argv[1], "capture") != 0 && strcmp(argv[1], "serve") != 0)) {
        std::cerr << "usage: e2e-image-streamer capture|serve IMAGES_DIR STORE_DIR\n";
        return 2;
    }
    bool capture = strcmp(argv[1], "capture") == 0;
    std::string store = argv[3];
    std::map<std::string, std::string> images;
    if (!capture)
        images = testsupport::readDirectoryFiles(store);
    auto streamer = testsupport::FakeImageStreamer::start(
        argv[2], capture ? testsupport::StreamerMode::Capture : testsupport::StreamerMode::Serve,
        std::move(images));
    if (!streamer.ok()) {
        std::cerr << streamer.error().describe() << "\n";
        return 1;
    }
    std::cout << "ready" << std::endl;
    auto result = (*streamer)->finish();
    if (!result.ok()) {
        std::cerr << result.error().describe() << "\n";
        return 1;
    }
    for (const auto& [name, bytes] : *result) {
        if (capture)
            std::ofstream(store + "/" + name, std::ios::binary | std::ios::trunc) << bytes;
        else
            std::cerr << "never asked for: " << name << "\n";
    }
    std::cerr << (capture ? "captured " : "left ") << result->size() << " images\n";
    return 0;
}
