// hal::Device dump side: phase order, "never leave a process paused", argument checks.
#include "mock_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using base::ErrorCode;
using base::Result;
using hal::DumpPhase;
using haltest::deviceFile;
using haltest::injected;
using haltest::MockDevice;
using ::testing::_;
using ::testing::HasSubstr;
using ::testing::InSequence;
using ::testing::Return;
using ::testing::StrictMock;

Result<void> ok() {
    return base::success();
}

class DeviceDump : public ::testing::Test {
protected:
    settings::Settings settings_;
    StrictMock<MockDevice> dev_{&settings_};
};

TEST_F(DeviceDump, GivenAHealthyProcess_WhenPauseCheckpointDumpFinish_ThenImplsRunInPhaseOrder) {
    const auto file = deviceFile(7);
    {
        InSequence seq;
        EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
        EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(ok()));
        EXPECT_CALL(dev_, streamContentsImpl(42)).WillOnce(Return(ok()));
        EXPECT_CALL(dev_, processOfFileImpl(_)).WillOnce(Return(Result<int>(42)));
        EXPECT_CALL(dev_, writeFileImagesImpl(_, 42)).WillOnce(Return(ok()));
        EXPECT_CALL(dev_, unpauseImpl(42)).WillOnce(Return(ok()));
    }

    auto paused = dev_.pauseProcess(42);
    ASSERT_TRUE(paused.ok());
    EXPECT_TRUE(*paused);
    EXPECT_EQ(dev_.phaseOf(42), DumpPhase::Paused);
    ASSERT_TRUE(dev_.checkpointProcess(42).ok());
    EXPECT_EQ(dev_.phaseOf(42), DumpPhase::Checkpointed);
    ASSERT_TRUE(dev_.dumpFile(file).ok());
    ASSERT_TRUE(dev_.finishDump(true).ok());
    EXPECT_EQ(dev_.phaseOf(42), DumpPhase::Unpaused);
}

TEST_F(DeviceDump, GivenAnUnpausedProcess_WhenCheckpointed_ThenPhaseOrderErrorAndNoImplCalled) {
    auto r = dev_.checkpointProcess(42);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::PhaseOrder);
    EXPECT_THAT(r.error().describe(), HasSubstr("process 42"));
    EXPECT_EQ(dev_.phaseOf(42), DumpPhase::None);
}

TEST_F(DeviceDump, GivenAPausedProcess_WhenPausedAgain_ThenPhaseOrderAndPauseImplNotCalledTwice) {
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    ASSERT_TRUE(dev_.pauseProcess(42).ok());

    auto again = dev_.pauseProcess(42);

    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().code(), ErrorCode::PhaseOrder);
    EXPECT_CALL(dev_, unpauseImpl(42)).WillOnce(Return(ok()));
    EXPECT_TRUE(dev_.finishDump(false).ok());
}

TEST_F(DeviceDump, GivenCollectFails_WhenCheckpointed_ThenUnpausedAtOnceAndNotAgainAtFinish) {
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    ASSERT_TRUE(dev_.pauseProcess(42).ok());
    {
        InSequence seq;
        EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(injected("no BO list")));
        EXPECT_CALL(dev_, unpauseImpl(42)).Times(1).WillOnce(Return(ok()));
    }

    auto r = dev_.checkpointProcess(42);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Injected);
    EXPECT_EQ(dev_.phaseOf(42), DumpPhase::Failed);
    ::testing::Mock::VerifyAndClearExpectations(&dev_);
    // StrictMock: any further unpauseImpl call fails the test.
    EXPECT_TRUE(dev_.finishDump(false).ok());
}

TEST_F(DeviceDump, GivenStreamFails_WhenCheckpointed_ThenUnpausedAtOnceAndNotAgainAtFinish) {
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    ASSERT_TRUE(dev_.pauseProcess(42).ok());
    {
        InSequence seq;
        EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(ok()));
        EXPECT_CALL(dev_, streamContentsImpl(42)).WillOnce(Return(injected("SDMA copy hung")));
        EXPECT_CALL(dev_, unpauseImpl(42)).Times(1).WillOnce(Return(ok()));
    }

    auto r = dev_.checkpointProcess(42);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(dev_.phaseOf(42), DumpPhase::Failed);
    ::testing::Mock::VerifyAndClearExpectations(&dev_);
    EXPECT_TRUE(dev_.finishDump(false).ok());
}

TEST_F(DeviceDump, GivenWriteFileImagesFails_WhenDumpFile_ThenUnpausedAtOnceAndNotAgainAtFinish) {
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(ok()));
    EXPECT_CALL(dev_, streamContentsImpl(42)).WillOnce(Return(ok()));
    ASSERT_TRUE(dev_.pauseProcess(42).ok());
    ASSERT_TRUE(dev_.checkpointProcess(42).ok());
    {
        InSequence seq;
        EXPECT_CALL(dev_, processOfFileImpl(_)).WillOnce(Return(Result<int>(42)));
        EXPECT_CALL(dev_, writeFileImagesImpl(_, 42)).WillOnce(Return(injected("disk full")));
        EXPECT_CALL(dev_, unpauseImpl(42)).Times(1).WillOnce(Return(ok()));
    }

    auto r = dev_.dumpFile(deviceFile(7));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(dev_.phaseOf(42), DumpPhase::Failed);
    ::testing::Mock::VerifyAndClearExpectations(&dev_);
    EXPECT_TRUE(dev_.finishDump(false).ok());
}

TEST_F(DeviceDump, GivenNoPriorPause_WhenDumpFile_ThenItPausesCollectsAndStreamsItself) {
    {
        InSequence seq;
        EXPECT_CALL(dev_, processOfFileImpl(_)).WillOnce(Return(Result<int>(42)));
        EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
        EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(ok()));
        EXPECT_CALL(dev_, streamContentsImpl(42)).WillOnce(Return(ok()));
        EXPECT_CALL(dev_, writeFileImagesImpl(_, 42)).WillOnce(Return(ok()));
        EXPECT_CALL(dev_, unpauseImpl(42)).WillOnce(Return(ok()));
    }

    ASSERT_TRUE(dev_.dumpFile(deviceFile(7)).ok());
    EXPECT_EQ(dev_.phaseOf(42), DumpPhase::Checkpointed);
    EXPECT_TRUE(dev_.finishDump(true).ok());
}

TEST_F(DeviceDump, GivenACheckpointedProcessWithTwoFiles_WhenBothDumped_ThenCheckpointRunsOnce) {
    EXPECT_CALL(dev_, processOfFileImpl(_)).Times(2).WillRepeatedly(Return(Result<int>(42)));
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(ok()));
    EXPECT_CALL(dev_, streamContentsImpl(42)).WillOnce(Return(ok()));
    EXPECT_CALL(dev_, writeFileImagesImpl(_, 42)).Times(2).WillRepeatedly(Return(ok()));
    EXPECT_CALL(dev_, unpauseImpl(42)).WillOnce(Return(ok()));

    ASSERT_TRUE(dev_.dumpFile(deviceFile(7)).ok());
    ASSERT_TRUE(dev_.dumpFile(deviceFile(8)).ok());
    EXPECT_TRUE(dev_.finishDump(true).ok());
}

TEST_F(DeviceDump, GivenAFileAlreadyDumped_WhenDumpedAgain_ThenPhaseOrder) {
    EXPECT_CALL(dev_, processOfFileImpl(_)).WillOnce(Return(Result<int>(42)));
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(ok()));
    EXPECT_CALL(dev_, streamContentsImpl(42)).WillOnce(Return(ok()));
    EXPECT_CALL(dev_, writeFileImagesImpl(_, 42)).WillOnce(Return(ok()));
    ASSERT_TRUE(dev_.dumpFile(deviceFile(7)).ok());

    auto again = dev_.dumpFile(deviceFile(7));

    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().code(), ErrorCode::PhaseOrder);
    EXPECT_THAT(again.error().describe(), HasSubstr("7"));
    EXPECT_CALL(dev_, unpauseImpl(42)).WillOnce(Return(ok()));
    EXPECT_TRUE(dev_.finishDump(false).ok());
}

TEST_F(DeviceDump, GivenAProcessWithNothingOnTheGpu_WhenPaused_ThenFalseAndNoUnpauseLater) {
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(false)));

    auto r = dev_.pauseProcess(42);

    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(*r);
    EXPECT_EQ(dev_.phaseOf(42), DumpPhase::None);
    // StrictMock: an unpauseImpl call here fails the test.
    EXPECT_TRUE(dev_.finishDump(true).ok());
}

TEST_F(DeviceDump, GivenPauseImplFails_WhenPaused_ThenErrorNamesThePidAndNoUnpauseLater) {
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(injected("queue evict failed"))));

    auto r = dev_.pauseProcess(42);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().describe(), "while pausing process 42: queue evict failed");
    EXPECT_EQ(dev_.phaseOf(42), DumpPhase::Failed);
    EXPECT_TRUE(dev_.finishDump(false).ok());
}

TEST_F(DeviceDump, GivenThePidOfAFileHasNothingOnTheGpu_WhenDumpFile_ThenInternalErrorNamingIt) {
    EXPECT_CALL(dev_, processOfFileImpl(_)).WillOnce(Return(Result<int>(42)));
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(false)));

    auto r = dev_.dumpFile(deviceFile(7, 5, "/dev/dri/renderD129"));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Internal);
    EXPECT_THAT(r.error().describe(), HasSubstr("process 42"));
    EXPECT_THAT(r.error().describe(), HasSubstr("/dev/dri/renderD129"));
}

TEST_F(DeviceDump,
       GivenSeveralPausedPidsAndFailingUnpauses_WhenFinishDump_ThenAllTriedFirstErrorReturned) {
    for (int pid : {10, 20, 30})
        EXPECT_CALL(dev_, pauseImpl(pid)).WillOnce(Return(Result<bool>(true)));
    for (int pid : {10, 20, 30})
        ASSERT_TRUE(dev_.pauseProcess(pid).ok());
    EXPECT_CALL(dev_, unpauseImpl(10)).WillOnce(Return(injected("first unpause failure")));
    EXPECT_CALL(dev_, unpauseImpl(20)).WillOnce(Return(injected("second unpause failure")));
    EXPECT_CALL(dev_, unpauseImpl(30)).WillOnce(Return(ok()));

    auto r = dev_.finishDump(false);

    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("first unpause failure"));
    EXPECT_EQ(dev_.phaseOf(30), DumpPhase::Unpaused);
}

TEST_F(DeviceDump,
       GivenOnePidFailedAndAnotherPaused_WhenFinishDump_ThenOnlyThePausedOneIsUnpaused) {
    EXPECT_CALL(dev_, pauseImpl(10)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, pauseImpl(20)).WillOnce(Return(Result<bool>(true)));
    ASSERT_TRUE(dev_.pauseProcess(10).ok());
    ASSERT_TRUE(dev_.pauseProcess(20).ok());
    EXPECT_CALL(dev_, collectObjectsImpl(10)).WillOnce(Return(injected("boom")));
    EXPECT_CALL(dev_, unpauseImpl(10)).Times(1).WillOnce(Return(ok()));
    ASSERT_FALSE(dev_.checkpointProcess(10).ok());
    EXPECT_CALL(dev_, unpauseImpl(20)).Times(1).WillOnce(Return(ok()));

    EXPECT_TRUE(dev_.finishDump(false).ok());

    EXPECT_EQ(dev_.phaseOf(10), DumpPhase::Failed);
    EXPECT_EQ(dev_.phaseOf(20), DumpPhase::Unpaused);
}

TEST_F(DeviceDump, GivenCollectFails_WhenCheckpointed_ThenTheErrorNamesThePid) {
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(injected("no BO list")));
    EXPECT_CALL(dev_, unpauseImpl(42)).WillOnce(Return(ok()));
    ASSERT_TRUE(dev_.pauseProcess(42).ok());

    auto r = dev_.checkpointProcess(42);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().describe(), "while collecting GPU objects of process 42: no BO list");
}

TEST_F(DeviceDump, GivenStreamFails_WhenCheckpointed_ThenTheErrorNamesThePid) {
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(ok()));
    EXPECT_CALL(dev_, streamContentsImpl(42)).WillOnce(Return(injected("SDMA copy hung")));
    EXPECT_CALL(dev_, unpauseImpl(42)).WillOnce(Return(ok()));
    ASSERT_TRUE(dev_.pauseProcess(42).ok());

    auto r = dev_.checkpointProcess(42);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().describe(), "while saving GPU memory of process 42: SDMA copy hung");
}

TEST_F(DeviceDump, GivenWriteFails_WhenDumpFile_ThenTheErrorNamesFileIdAndPid) {
    EXPECT_CALL(dev_, processOfFileImpl(_)).WillOnce(Return(Result<int>(42)));
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(ok()));
    EXPECT_CALL(dev_, streamContentsImpl(42)).WillOnce(Return(ok()));
    EXPECT_CALL(dev_, writeFileImagesImpl(_, 42)).WillOnce(Return(injected("disk full")));
    EXPECT_CALL(dev_, unpauseImpl(42)).WillOnce(Return(ok()));

    auto r = dev_.dumpFile(deviceFile(7, 5, "/dev/dri/renderD128"));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().describe(),
              "while writing images of /dev/dri/renderD128 (file id 7) of process 42: disk full");
}

TEST_F(DeviceDump, GivenCheckpointFailsInsideDumpFile_WhenDumpFile_ThenContextNamesFileAndPid) {
    EXPECT_CALL(dev_, processOfFileImpl(_)).WillOnce(Return(Result<int>(42)));
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(injected("no BO list")));
    EXPECT_CALL(dev_, unpauseImpl(42)).WillOnce(Return(ok()));

    auto r = dev_.dumpFile(deviceFile(7, 5, "/dev/kfd"));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().describe(), "while dumping /dev/kfd (file id 7): while collecting GPU "
                                    "objects of process 42: no BO list");
}

TEST_F(DeviceDump, GivenProcessOfFileFails_WhenDumpFile_ThenContextNamesTheFile) {
    EXPECT_CALL(dev_, processOfFileImpl(_)).WillOnce(Return(Result<int>(injected("no owner"))));

    auto r = dev_.dumpFile(deviceFile(7, 5, "/dev/kfd"));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().describe(), "while dumping /dev/kfd (file id 7): no owner");
}

TEST_F(DeviceDump, GivenUnpauseAlsoFailsAfterAFailure_WhenCheckpointed_ThenBothAreReported) {
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, collectObjectsImpl(42)).WillOnce(Return(injected("no BO list")));
    EXPECT_CALL(dev_, unpauseImpl(42)).WillOnce(Return(injected("restore queues failed")));
    ASSERT_TRUE(dev_.pauseProcess(42).ok());

    auto r = dev_.checkpointProcess(42);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Injected);
    EXPECT_THAT(r.error().describe(), HasSubstr("no BO list"));
    EXPECT_THAT(r.error().describe(), HasSubstr("unpausing process 42 failed too"));
    EXPECT_THAT(r.error().describe(), HasSubstr("restore queues failed"));
}

TEST_F(DeviceDump, GivenFdMinusOne_WhenClaimFile_ThenInvalidArgumentAndNoImplCalled) {
    auto r = dev_.claimFile(deviceFile(7, -1));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument);
}

TEST_F(DeviceDump, GivenFdMinusOne_WhenClaimVma_ThenInvalidArgumentAndNoImplCalled) {
    hal::VmaRef vma;
    vma.fd = -1;

    auto r = dev_.claimVma(vma);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument);
}

TEST_F(DeviceDump, GivenFdMinusOne_WhenDumpFile_ThenInvalidArgumentAndNoImplCalled) {
    auto r = dev_.dumpFile(deviceFile(7, -1));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument);
}

TEST_F(DeviceDump, GivenPidZeroOrNegative_WhenPaused_ThenInvalidArgumentAndNoImplCalled) {
    for (int pid : {0, -1}) {
        auto r = dev_.pauseProcess(pid);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument);
        EXPECT_EQ(dev_.phaseOf(pid), DumpPhase::None);
    }
}

TEST_F(DeviceDump, GivenAValidFd_WhenClaimFile_ThenTheImplAnswerIsReturned) {
    EXPECT_CALL(dev_, claimFileImpl(_)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, claimVmaImpl(_)).WillOnce(Return(Result<bool>(false)));
    hal::VmaRef vma;
    vma.fd = 3;

    auto file = dev_.claimFile(deviceFile(7));
    auto mapping = dev_.claimVma(vma);

    ASSERT_TRUE(file.ok());
    EXPECT_TRUE(*file);
    ASSERT_TRUE(mapping.ok());
    EXPECT_FALSE(*mapping);
}

TEST_F(DeviceDump, GivenNoImageStore_WhenImagesAsked_ThenInternalErrorNamingTheBackend) {
    auto r = dev_.images();

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Internal);
    EXPECT_THAT(r.error().describe(), HasSubstr("test"));
}

TEST(DumpPhaseName, GivenEachPhase_WhenNamed_ThenTheNameIsReadable) {
    EXPECT_STREQ(hal::dumpPhaseName(DumpPhase::None), "not started");
    EXPECT_STREQ(hal::dumpPhaseName(DumpPhase::Paused), "paused");
    EXPECT_STREQ(hal::dumpPhaseName(DumpPhase::Checkpointed), "checkpointed");
    EXPECT_STREQ(hal::dumpPhaseName(DumpPhase::Failed), "failed");
}

} // namespace

namespace {

// Every backend's contents go through the HAL's recipe (hal/bo_contents.h), which compresses for
// all of them: compression is no reason to refuse a pause.
TEST_F(DeviceDump, GivenCompression_WhenPaused_ThenTheBackendPauses) {
    settings_.contentCompression = "zstd:3";
    EXPECT_CALL(dev_, pauseImpl(42)).WillOnce(Return(Result<bool>(true)));
    auto paused = dev_.pauseProcess(42);
    ASSERT_TRUE(paused.ok()) << paused.error().describe();
    EXPECT_TRUE(*paused);
}

} // namespace
