// hal::Device restore side: restoreFile once per id, a failed restore refuses to resume and
// aborts at finish; GPU mapping is memoised.
#include "mock_device.h"

#include "topology/synth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using base::ErrorCode;
using base::Result;
using haltest::injected;
using haltest::MockDevice;
using ::testing::HasSubstr;
using ::testing::Return;
using ::testing::StrictMock;

Result<void> ok() {
    return base::success();
}

class DeviceRestore : public ::testing::Test {
protected:
    settings::Settings settings_;
    StrictMock<MockDevice> dev_{&settings_};
};

TEST_F(DeviceRestore, GivenAFileRestored_WhenRestoredAgain_ThenPhaseOrderAndImplCalledOnce) {
    EXPECT_CALL(dev_, restoreFileImpl(7u)).Times(1).WillOnce(Return(Result<int>(11)));
    auto first = dev_.restoreFile(7);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(*first, 11);

    auto again = dev_.restoreFile(7);

    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().code(), ErrorCode::PhaseOrder);
    EXPECT_THAT(again.error().describe(), HasSubstr("7"));
}

TEST_F(DeviceRestore, GivenRestoreFileFails_WhenTheErrorIsDescribed_ThenItNamesTheFileId) {
    EXPECT_CALL(dev_, restoreFileImpl(7u)).WillOnce(Return(Result<int>(injected("no VRAM"))));

    auto r = dev_.restoreFile(7);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Injected);
    EXPECT_EQ(r.error().describe(), "while restoring file id 7: no VRAM");
}

TEST_F(DeviceRestore, GivenAFailedRestoreFile_WhenResumeAsked_ThenRefusedWithoutCallingImpl) {
    EXPECT_CALL(dev_, restoreFileImpl(7u)).WillOnce(Return(Result<int>(injected("no VRAM"))));
    ASSERT_FALSE(dev_.restoreFile(7).ok());

    auto r = dev_.resumeProcess(42);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::PhaseOrder);
    EXPECT_THAT(r.error().describe(), HasSubstr("process 42"));
}

TEST_F(DeviceRestore, GivenAFailedRestoreFile_WhenAnotherFileRestored_ThenRefusedWithoutImpl) {
    EXPECT_CALL(dev_, restoreFileImpl(7u)).WillOnce(Return(Result<int>(injected("no VRAM"))));
    ASSERT_FALSE(dev_.restoreFile(7).ok());

    auto r = dev_.restoreFile(8);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::PhaseOrder);
}

TEST_F(DeviceRestore, GivenAFailedRestoreFile_WhenPostForking_ThenRefusedWithoutImpl) {
    EXPECT_CALL(dev_, restoreFileImpl(7u)).WillOnce(Return(Result<int>(injected("no VRAM"))));
    ASSERT_FALSE(dev_.restoreFile(7).ok());

    auto r = dev_.postForking();

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::PhaseOrder);
}

TEST_F(DeviceRestore, GivenAFailedRestoreFile_WhenFinishRestoreFalse_ThenAbortRestoreImplCalled) {
    EXPECT_CALL(dev_, restoreFileImpl(7u)).WillOnce(Return(Result<int>(injected("no VRAM"))));
    ASSERT_FALSE(dev_.restoreFile(7).ok());
    EXPECT_CALL(dev_, abortRestoreImpl()).Times(1).WillOnce(Return(ok()));

    EXPECT_TRUE(dev_.finishRestore(false).ok());
}

TEST_F(DeviceRestore,
       GivenAFailedRestoreFile_WhenCriuStillReportsSuccess_ThenAbortRestoreImplCalled) {
    EXPECT_CALL(dev_, restoreFileImpl(7u)).WillOnce(Return(Result<int>(injected("no VRAM"))));
    ASSERT_FALSE(dev_.restoreFile(7).ok());
    EXPECT_CALL(dev_, abortRestoreImpl()).Times(1).WillOnce(Return(ok()));

    EXPECT_TRUE(dev_.finishRestore(true).ok());
}

TEST_F(DeviceRestore, GivenASuccessfulRestore_WhenFinishRestoreTrue_ThenNoAbort) {
    EXPECT_CALL(dev_, restoreFileImpl(7u)).WillOnce(Return(Result<int>(11)));
    EXPECT_CALL(dev_, postForkingImpl()).WillOnce(Return(ok()));
    EXPECT_CALL(dev_, resumeImpl(42)).WillOnce(Return(Result<bool>(true)));
    ASSERT_TRUE(dev_.restoreFile(7).ok());
    ASSERT_TRUE(dev_.postForking().ok());
    auto resumed = dev_.resumeProcess(42);
    ASSERT_TRUE(resumed.ok());
    EXPECT_TRUE(*resumed);

    // StrictMock: abortRestoreImpl here would fail the test.
    EXPECT_TRUE(dev_.finishRestore(true).ok());
}

TEST_F(DeviceRestore, GivenCriuFailedElsewhere_WhenFinishRestoreFalse_ThenAbortRestoreImplCalled) {
    EXPECT_CALL(dev_, restoreFileImpl(7u)).WillOnce(Return(Result<int>(11)));
    ASSERT_TRUE(dev_.restoreFile(7).ok());
    EXPECT_CALL(dev_, abortRestoreImpl()).WillOnce(Return(injected("cannot free BOs")));

    auto r = dev_.finishRestore(false);

    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(), HasSubstr("cannot free BOs"));
}

TEST_F(DeviceRestore, GivenResumeImplFails_WhenResumed_ThenTheErrorNamesThePid) {
    EXPECT_CALL(dev_, resumeImpl(42)).WillOnce(Return(Result<bool>(injected("queues"))));

    auto r = dev_.resumeProcess(42);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().describe(), "while resuming process 42: queues");
}

TEST_F(DeviceRestore, GivenPidZero_WhenResumed_ThenInvalidArgumentWithoutImpl) {
    auto r = dev_.resumeProcess(0);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::InvalidArgument);
}

TEST_F(DeviceRestore, GivenAPidWithNothingOfOurs_WhenResumed_ThenFalse) {
    EXPECT_CALL(dev_, resumeImpl(42)).WillOnce(Return(Result<bool>(false)));

    auto r = dev_.resumeProcess(42);

    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(*r);
}

TEST_F(DeviceRestore, GivenAVmaQuery_WhenUpdateVmaMap_ThenTheImplAnswerPassesThrough) {
    hal::VmaAnswer answer;
    answer.newPgoff = 0x1234;
    answer.fd = 9;
    EXPECT_CALL(dev_, updateVmaMapImpl(::testing::_))
        .WillOnce(Return(Result<std::optional<hal::VmaAnswer>>(answer)));

    auto r = dev_.updateVmaMap(hal::VmaQuery{"/dev/dri/renderD128", 0x7f0000, 0x10});

    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->has_value());
    EXPECT_EQ((*r)->newPgoff, 0x1234u);
    EXPECT_EQ((*r)->fd, 9);
}

TEST_F(DeviceRestore, GivenAnImageId_WhenOwnsImage_ThenTheImplAnswerPassesThrough) {
    EXPECT_CALL(dev_, ownsImageImpl(3u)).WillOnce(Return(Result<bool>(true)));
    EXPECT_CALL(dev_, ownsImageImpl(4u)).WillOnce(Return(Result<bool>(false)));

    EXPECT_TRUE(*dev_.ownsImage(3));
    EXPECT_FALSE(*dev_.ownsImage(4));
}

} // namespace
