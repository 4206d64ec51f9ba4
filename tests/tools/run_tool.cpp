#include "run_tool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tooltest {
namespace {

int64_t nowMs() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

} // namespace

std::string RunResult::describe() const {
    std::ostringstream s;
    s << "exit " << exitCode;
    if (signal)
        s << " (signal " << signal << ")";
    if (timedOut)
        s << " (timed out)";
    s << "\n--- stdout ---\n" << out << "--- stderr ---\n" << err;
    return s.str();
}

Env cleanEnv() {
    Env env;
    if (const char* path = getenv("PATH"))
        env["PATH"] = path;
    else
        env["PATH"] = "/usr/local/bin:/usr/bin:/bin";
    env["CRIU_AMDGPU_CONFIG"] = "";
    env["CRIU_AMDGPU_OPTIONS_FILE"] = "";
    return env;
}

Env cleanEnv(const Env& extra) {
    Env env = cleanEnv();
    for (const auto& [name, value] : extra)
        env[name] = value;
    return env;
}

RunResult runProgram(const std::string& program, const std::vector<std::string>& args,
                     const Env& env, int timeoutSeconds) {
    RunResult result;
    int outPipe[2], errPipe[2];
    if (pipe2(outPipe, O_CLOEXEC) != 0) {
        result.err = std::string("pipe: ") + strerror(errno);
        return result;
    }
    if (pipe2(errPipe, O_CLOEXEC) != 0) {
        result.err = std::string("pipe: ") + strerror(errno);
        close(outPipe[0]);
        close(outPipe[1]);
        return result;
    }

    std::vector<std::string> envStrings;
    for (const auto& [name, value] : env)
        envStrings.push_back(name + "=" + value);
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (const std::string& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (std::string& e : envStrings)
        envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(outPipe[1]);
    close(errPipe[1]);
    if (rc != 0) {
        result.err = "posix_spawn " + program + ": " + strerror(rc);
        close(outPipe[0]);
        close(errPipe[0]);
        return result;
    }

    // Drain both pipes together, so a child filling one of them never blocks.
    pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int openPipes = 2;
    int64_t deadline = nowMs() + int64_t(timeoutSeconds) * 1000;
    while (openPipes > 0) {
        int64_t left = deadline - nowMs();
        if (left <= 0) {
            result.timedOut = true;
            kill(pid, SIGKILL);
            break;
        }
        int n = poll(fds, 2, static_cast<int>(left));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char buf[4096];
            ssize_t got = read(fds[i].fd, buf, sizeof buf);
            if (got > 0) {
                sinks[i]->append(buf, static_cast<size_t>(got));
            } else if (got == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                --openPipes;
            }
        }
    }
    for (pollfd& f : fds)
        if (f.fd >= 0)
            close(f.fd);

    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status))
        result.exitCode = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        result.signal = WTERMSIG(status);
    return result;
}

RunResult makeMockMachine(const std::string& topology, const std::string& root, int gpus) {
    RunResult generate =
        runTool({"topology", "generate", "--out", topology, "--gpus", std::to_string(gpus)});
    if (generate.exitCode != 0)
        return generate;
    return runTool({"mock", "init", "--root", root, "--topology", topology});
}

std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        out.push_back(line);
    return out;
}

} // namespace tooltest
