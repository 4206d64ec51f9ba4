#include "bounded_child.h"

#include <csignal>
#include <cstring>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace testsupport {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

} // namespace

std::string runBounded(const std::function<std::string()>& body) {
    int fds[2];
    if (pipe(fds) != 0)
        return "did not finish: no pipe";
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        // ASan's allocator makes the bodies several times slower, and more under load (a body of
        // 5 s under ASan alone took over 20 with other builds beside it).
        alarm(kAddressSanitizer ? 60 : 20);
        if (!kAddressSanitizer) {
            rlimit limit{1ul << 30, 1ul << 30};
            setrlimit(RLIMIT_AS, &limit);
        }
        std::string out = body();
        ssize_t n = write(fds[1], out.data(), out.size());
        _exit(n == static_cast<ssize_t>(out.size()) ? 0 : 1);
    }
    close(fds[1]);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;)
        out.append(buf, static_cast<size_t>(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        return std::string("did not finish: ") + strsignal(WTERMSIG(status)) +
               " (a loop, a blocking call or an unbounded allocation)";
    return out;
}

} // namespace testsupport
