#include "bounded_child.h"

#include <csignal>
#include <cstring>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace testsupport {
namespace {

/// ASan's and TSan's shadow memory take terabytes of address space at start: a limit on it would
/// fail their own allocator ("ThreadSanitizer: internal allocator is out of memory").
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizer = true;
#else
constexpr bool kSanitizer = false;
#endif
#else
constexpr bool kSanitizer = false;
#endif

} // namespace

std::string runBounded(const std::function<std::string()>& body) {
    int fds[2];
    if (pipe(fds) != 0)
        return "did not finish: no pipe";
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        // A sanitizer makes the bodies several times slower, and more under load (a body of 5 s
        // under ASan alone took over 20 with other builds beside it). The address-space limit
        // that catches an unbounded allocation holds in the other builds.
        alarm(kSanitizer ? 60 : 20);
        if (!kSanitizer) {
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
