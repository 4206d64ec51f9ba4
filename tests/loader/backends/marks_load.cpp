// A library that says when it is loaded: its constructor creates the file named by
// LOADER_TEST_LOAD_MARK. It has no backend entry point, so once loaded it is a skipped candidate;
// the tests of untrusted directories look for the mark to see whether its code ever ran.
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

namespace {

__attribute__((constructor)) void markLoaded() {
    const char* mark = getenv("LOADER_TEST_LOAD_MARK");
    if (!mark)
        return;
    int fd = open(mark, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

} // namespace
