// wakePromptly: what the kernel holds for the calling thread afterwards, read back with
// sched_getattr.
#include "base/prompt_wakeup.h"

#include <gtest/gtest.h>

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <thread>

namespace {

/// What sched_getattr says of the calling thread (the kernel's struct sched_attr, version 1).
struct Attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t utilMin, utilMax;
};

Attr current() {
    Attr a{};
    EXPECT_EQ(syscall(SYS_sched_getattr, 0, &a, sizeof a, 0), 0);
    return a;
}

/// Runs `fn` on a thread of its own, so the test's thread keeps its scheduling.
template <typename Fn> void onThread(Fn fn) {
    std::thread t(fn);
    t.join();
}

/// A kernel that keeps a normal task's slice (6.12 on) reports it, 0 before it.
void expectShortSliceWhereKept(const Attr& before, const Attr& after) {
    if (before.runtime)
        EXPECT_EQ(after.runtime, base::kPromptSliceNs);
    else
        EXPECT_EQ(after.runtime, 0u);
}

TEST(PromptWakeup, GivenANormalThreadAtNice4_WhenItAsks_ThenItsSliceIsTheShortestAndItsNiceKept) {
    onThread([] {
        ASSERT_EQ(setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 4), 0);
        Attr before = current();
        ASSERT_EQ(before.policy, static_cast<uint32_t>(SCHED_OTHER));
        base::wakePromptly();
        Attr after = current();
        EXPECT_EQ(after.policy, static_cast<uint32_t>(SCHED_OTHER));
        EXPECT_EQ(after.nice, 4);
        EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), 4);
        expectShortSliceWhereKept(before, after);
    });
}

TEST(PromptWakeup, GivenABatchThread_WhenItAsks_ThenItStaysBatchWithTheShortestSlice) {
    onThread([] {
        sched_param none{};
        ASSERT_EQ(sched_setscheduler(0, SCHED_BATCH, &none), 0);
        Attr before = current();
        base::wakePromptly();
        Attr after = current();
        EXPECT_EQ(after.policy, static_cast<uint32_t>(SCHED_BATCH));
        expectShortSliceWhereKept(before, after);
    });
}

TEST(PromptWakeup, GivenAnIdlePolicyThread_WhenItAsks_ThenNothingChanges) {
    onThread([] {
        sched_param none{};
        ASSERT_EQ(sched_setscheduler(0, SCHED_IDLE, &none), 0);
        Attr before = current();
        base::wakePromptly();
        Attr after = current();
        EXPECT_EQ(after.policy, static_cast<uint32_t>(SCHED_IDLE));
        EXPECT_EQ(after.runtime, before.runtime);
        EXPECT_EQ(after.nice, before.nice);
    });
}

} // namespace
