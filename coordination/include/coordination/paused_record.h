#pragma once
/// \file
/// The record a dump's guardian keeps of the processes whose GPU work the dump has paused, so
/// that an operator (`criu-amdgpu paused`) finds what a criu killed together with its guardian
/// left paused. One file per criu run, `DIR/paused-<criu pid>`, rewritten whole (write to a
/// temporary file, rename) at every change:
///
///   criu <pid>
///   guardian <pid>
///   backend <name>
///   paused <pid>            one line per process paused and not resumed
///
/// The guardian removes it at a normal end, and after it released every process of a dead criu.

#include "base/result.h"

#include <string>
#include <vector>

namespace coordination {

using base::Result;

/// Where guardians keep their records and logs unless told otherwise.
inline constexpr const char* kDefaultGuardianDir = "/run/criu-amdgpu";

/// One guardian's record.
struct PausedRecord {
    int criuPid = 0;
    int guardianPid = 0;
    std::string backend;
    std::vector<int> paused;
    std::string path; ///< the file it was read from (set by readPausedRecords)
};

/// `DIR/paused-<criuPid>`.
std::string pausedRecordPath(const std::string& dir, int criuPid);
/// `DIR/guardian-<criuPid>.log`: what the guardian of that criu run did.
std::string guardianLogPath(const std::string& dir, int criuPid);

/// Writes `record` to pausedRecordPath(dir, record.criuPid), replacing it atomically; makes DIR
/// (mode 0700) when it is missing.
Result<void> writePausedRecord(const std::string& dir, const PausedRecord& record);
/// Parses one record; an Image error naming `name` and the line for anything malformed.
Result<PausedRecord> parsePausedRecord(const std::string& text, const std::string& name);
/// Every record in DIR (none when DIR does not exist), in criu pid order; a malformed file is an
/// error naming it.
Result<std::vector<PausedRecord>> readPausedRecords(const std::string& dir);
/// Removes `pid` from every record of DIR, and the records left with no process.
Result<void> forgetPausedProcess(const std::string& dir, int pid);

} // namespace coordination
