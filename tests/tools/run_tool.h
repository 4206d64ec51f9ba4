#pragma once
/// \file
/// Runs a program as a user would and captures what it says: stdout, stderr and the exit code.
/// The child gets exactly the environment given (no inherited variables), stdin from /dev/null.

#include <map>
#include <string>
#include <vector>

namespace tooltest {

/// The path of the built criu-amdgpu.
inline constexpr const char* kTool = CRIU_AMDGPU_TOOL;

/// An environment: name -> value (an empty value is set, not removed).
using Env = std::map<std::string, std::string>;

struct RunResult {
    int exitCode = -1; ///< the exit status, or -1 when the program did not exit normally
    int signal = 0;    ///< the terminating signal, or 0
    bool timedOut = false;
    std::string out; ///< everything written to stdout
    std::string err; ///< everything written to stderr
    /// A one-line summary for failure messages.
    std::string describe() const;
};

/// The controlled environment every test starts from: only PATH (from this process), and
/// CRIU_AMDGPU_CONFIG and CRIU_AMDGPU_OPTIONS_FILE set to the empty string, which reads no YAML
/// file and no options file, so /etc/criu/amdgpu.{yaml,conf} on the machine cannot interfere.
/// A developer's own CRIU_AMDGPU_* and KFD_* variables are not passed on.
Env cleanEnv();

/// cleanEnv() with `extra` set on top (replacing what cleanEnv() set).
Env cleanEnv(const Env& extra);

/// Runs `program` with `args` (argv[1]...) in exactly `env`. Kills it after `timeoutSeconds`.
RunResult runProgram(const std::string& program, const std::vector<std::string>& args,
                     const Env& env, int timeoutSeconds = 60);

/// Runs the built criu-amdgpu.
inline RunResult runTool(const std::vector<std::string>& args, const Env& env = cleanEnv()) {
    return runProgram(kTool, args, env);
}

/// Makes a mock GPU machine the way a user would: `criu-amdgpu topology generate --out
/// TOPOLOGY --gpus GPUS`, then `criu-amdgpu mock init --root ROOT --topology TOPOLOGY`. Returns
/// the run of mock init, or of topology generate when that failed.
RunResult makeMockMachine(const std::string& topology, const std::string& root, int gpus);

/// The lines of `text` (without their newlines).
std::vector<std::string> lines(const std::string& text);

} // namespace tooltest
