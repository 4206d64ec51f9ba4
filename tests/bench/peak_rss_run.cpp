// peak-rss-run CMD [ARGS...]: runs CMD, then prints "peak_rss_kib N" (the largest resident set of
// CMD and of the descendants it waited for, getrusage(RUSAGE_CHILDREN)) on stderr; exits with
// CMD's status.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: peak-rss-run CMD [ARGS...]\n");
        return 2;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("peak-rss-run: fork");
        return 2;
    }
    if (child == 0) {
        execvp(argv[1], argv + 1);
        perror("peak-rss-run: exec");
        _exit(127);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    rusage usage{};
    getrusage(RUSAGE_CHILDREN, &usage);
    fprintf(stderr, "peak_rss_kib %ld\n", usage.ru_maxrss);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
