// Result/Error: describe(), errno text, negative errno mapping and the HAL_TRY family.
#include "base/result.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

using base::Error;
using base::ErrorCode;
using base::Result;

Result<int> failWith(ErrorCode code, const char* message) {
    return base::makeError(code, "%s", message);
}

Result<int> succeedWith(int value) {
    return value;
}

TEST(ResultError, GivenContextAddedInnermostFirst_WhenDescribed_ThenOutermostComesFirst) {
    Error e(ErrorCode::Io, 0, "short read");
    e.addContext("while reading BO 2").addContext("while dumping file 7");

    EXPECT_EQ(e.describe(), "while dumping file 7: while reading BO 2: short read");
    ASSERT_EQ(e.context().size(), 2u);
    EXPECT_EQ(e.context()[0], "while reading BO 2");
}

TEST(ResultError, GivenAnErrno_WhenDescribed_ThenStrerrorTextFollowsTheMessage) {
    Error e(ErrorCode::Io, EIO, "short read");
    e.addContext("while reading BO 2");

    EXPECT_EQ(e.describe(), std::string("while reading BO 2: short read (") + strerror(EIO) + ")");
}

TEST(ResultError, GivenNoErrno_WhenDescribed_ThenNoParenthesisedText) {
    Error e(ErrorCode::Topology, 0, "no GPUs");

    EXPECT_EQ(e.describe(), "no GPUs");
}

TEST(ResultError, GivenAnErrno_WhenConvertedToNegativeErrno_ThenItIsMinusThatErrno) {
    EXPECT_EQ(Error(ErrorCode::InvalidArgument, EACCES, "x").toNegativeErrno(), -EACCES);
    EXPECT_EQ(Error(ErrorCode::Kernel, EBUSY, "x").toNegativeErrno(), -EBUSY);
}

TEST(ResultError, GivenNoErrno_WhenConvertedToNegativeErrno_ThenTheCodeDecides) {
    auto neg = [](ErrorCode c) { return Error(c, 0, "x").toNegativeErrno(); };
    EXPECT_EQ(neg(ErrorCode::InvalidArgument), -EINVAL);
    EXPECT_EQ(neg(ErrorCode::Image), -EINVAL);
    EXPECT_EQ(neg(ErrorCode::Config), -EINVAL);
    EXPECT_EQ(neg(ErrorCode::NotPresent), -ENODEV);
    EXPECT_EQ(neg(ErrorCode::NoMapping), -ENODEV);
    EXPECT_EQ(neg(ErrorCode::NotSupported), -ENOTSUP);
    EXPECT_EQ(neg(ErrorCode::NotFound), -ENOENT);
    EXPECT_EQ(neg(ErrorCode::OutOfMemory), -ENOMEM);
    EXPECT_EQ(neg(ErrorCode::Io), -EIO);
    EXPECT_EQ(neg(ErrorCode::Internal), -EIO);
    EXPECT_EQ(neg(ErrorCode::PhaseOrder), -EIO);
}

TEST(ResultError, GivenEveryCode_WhenNamed_ThenNameAndTextComeFromTheTable) {
    EXPECT_STREQ(base::errorCodeName(ErrorCode::NoMapping), "NoMapping");
    EXPECT_STREQ(base::errorCodeText(ErrorCode::NoMapping), "no GPU mapping");
    EXPECT_STREQ(base::errorCodeName(ErrorCode::InvalidArgument), "InvalidArgument");
    EXPECT_STREQ(base::errorCodeName(ErrorCode::Internal), "Internal");
}

TEST(ResultError, GivenAPrintfFormat_WhenMakeErrnoError_ThenCodeErrnoAndMessageAreKept) {
    Error e = base::makeErrnoError(ErrorCode::Kernel, ENOMEM, "ioctl %s on GPU 0x%04x", "CRIU_OP",
                                   0x59ea);

    EXPECT_EQ(e.code(), ErrorCode::Kernel);
    EXPECT_EQ(e.sysErrno(), ENOMEM);
    EXPECT_EQ(e.message(), "ioctl CRIU_OP on GPU 0x59ea");
}

TEST(ResultError, GivenALongFormattedString_WhenStrFormat_ThenNothingIsTruncated) {
    std::string big(5000, 'x');

    EXPECT_EQ(base::strFormat("<%s>", big.c_str()), "<" + big + ">");
}

TEST(ResultValue, GivenAnError_WhenValueOr_ThenTheFallbackIsReturned) {
    EXPECT_EQ(failWith(ErrorCode::Io, "x").valueOr(42), 42);
    EXPECT_EQ(succeedWith(7).valueOr(42), 7);
}

// --- HAL_TRY family

Result<void> tryVoid(Result<int> inner, bool* reachedEnd) {
    HAL_TRY(inner);
    *reachedEnd = true;
    return base::success();
}

TEST(ResultMacros, GivenAnError_WhenHalTry_ThenItIsReturnedUnchangedAndTheRestIsSkipped) {
    bool reached = false;
    Result<void> r = tryVoid(failWith(ErrorCode::NotFound, "no such BO"), &reached);

    ASSERT_FALSE(r.ok());
    EXPECT_FALSE(reached);
    EXPECT_EQ(r.error().code(), ErrorCode::NotFound);
    EXPECT_EQ(r.error().describe(), "no such BO");
}

TEST(ResultMacros, GivenSuccess_WhenHalTry_ThenExecutionContinues) {
    bool reached = false;
    Result<void> r = tryVoid(succeedWith(1), &reached);

    EXPECT_TRUE(r.ok());
    EXPECT_TRUE(reached);
}

Result<int> tryAssign(Result<int> inner) {
    HAL_TRY_ASSIGN(int v, std::move(inner));
    return v * 2;
}

TEST(ResultMacros, GivenAValue_WhenHalTryAssign_ThenTheDeclarationReceivesIt) {
    Result<int> r = tryAssign(succeedWith(21));

    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, 42);
}

TEST(ResultMacros, GivenAnError_WhenHalTryAssign_ThenTheErrorPropagates) {
    Result<int> r = tryAssign(failWith(ErrorCode::Kernel, "ioctl failed"));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Kernel);
    EXPECT_TRUE(r.error().context().empty());
}

Result<void> restoreBo(int bo) {
    return base::makeErrnoError(ErrorCode::Kernel, EFAULT, "copy of BO %d failed", bo);
}

Result<void> restoreGpu(uint32_t gpu) {
    HAL_TRY_CONTEXT(restoreBo(3), "while restoring BO %d of GPU 0x%04x", 3, gpu);
    return base::success();
}

Result<int> restoreFile(uint32_t id) {
    HAL_TRY_CONTEXT(restoreGpu(0x59ea), "while restoring file id %u", id);
    return 0;
}

TEST(ResultMacros, GivenNestedHalTryContext_WhenTheInnermostFails_ThenEachLevelAddsOneLine) {
    Result<int> r = restoreFile(9);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Kernel);
    EXPECT_EQ(r.error().sysErrno(), EFAULT);
    ASSERT_EQ(r.error().context().size(), 2u);
    EXPECT_EQ(r.error().describe(), std::string("while restoring file id 9: while restoring BO 3 "
                                                "of GPU 0x59ea: copy of BO 3 failed (") +
                                        strerror(EFAULT) + ")");
}

Result<void> tryContextOnSuccess(bool* reached) {
    HAL_TRY_CONTEXT(succeedWith(1), "never added");
    *reached = true;
    return base::success();
}

TEST(ResultMacros, GivenSuccess_WhenHalTryContext_ThenExecutionContinues) {
    bool reached = false;
    EXPECT_TRUE(tryContextOnSuccess(&reached).ok());
    EXPECT_TRUE(reached);
}

Result<int> tryAssignContext(Result<int> inner) {
    HAL_TRY_ASSIGN_CONTEXT(int v, std::move(inner), "while reading %s", "amdgpu-kfd-1.img");
    return v + 1;
}

TEST(ResultMacros, GivenAnError_WhenHalTryAssignContext_ThenTheContextLineIsAdded) {
    Result<int> r = tryAssignContext(failWith(ErrorCode::Image, "truncated"));

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().describe(), "while reading amdgpu-kfd-1.img: truncated");
}

TEST(ResultMacros, GivenAValue_WhenHalTryAssignContext_ThenTheValueIsUsed) {
    Result<int> r = tryAssignContext(succeedWith(1));

    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, 2);
}

} // namespace
