// The dump guardians' records (coordination/paused_record.h) are written as new files: whatever
// was planted at a record's temporary name (a link to a host file, a FIFO) is neither written
// through nor waited on.
#include "coordination/paused_record.h"

#include "bounded_child.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

using testsupport::TempDir;

const coordination::PausedRecord kRecord{4242, 4243, "kfd", {41, 42}, {}};

/// The record kRecord written in `dir` read back: its paused pids, or what went wrong.
std::string writtenAndReadBack(const std::string& dir) {
    return testsupport::runBounded([&]() -> std::string {
        if (auto w = coordination::writePausedRecord(dir, kRecord); !w.ok())
            return w.error().describe();
        auto records = coordination::readPausedRecords(dir);
        if (!records.ok())
            return records.error().describe();
        std::string out;
        for (const coordination::PausedRecord& r : *records)
            for (int pid : r.paused)
                out += std::to_string(pid) + " ";
        return out;
    });
}

TEST(PausedRecord, GivenALinkAtTheTemporaryNameWhenARecordIsWrittenThenItsTargetIsUntouched) {
    TempDir tmp;
    testsupport::writeFile(tmp / "host-file", "host contents");
    ASSERT_EQ(mkdir((tmp / "records").c_str(), 0700), 0);
    ASSERT_EQ(symlink((tmp / "host-file").c_str(), (tmp / "records/paused-4242.tmp").c_str()), 0);
    EXPECT_EQ(writtenAndReadBack(tmp / "records"), "41 42 ");
    EXPECT_EQ(testsupport::readFile(tmp / "host-file"), "host contents");
    struct stat st;
    ASSERT_EQ(lstat((tmp / "records/paused-4242").c_str(), &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST(PausedRecord, GivenAFifoAtTheTemporaryNameWhenARecordIsWrittenThenItIsReplacedUnopened) {
    TempDir tmp;
    ASSERT_EQ(mkdir((tmp / "records").c_str(), 0700), 0);
    ASSERT_EQ(mkfifo((tmp / "records/paused-4242.tmp").c_str(), 0600), 0);
    EXPECT_EQ(writtenAndReadBack(tmp / "records"), "41 42 ");
}

} // namespace
