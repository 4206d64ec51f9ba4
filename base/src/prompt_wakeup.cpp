#include "base/prompt_wakeup.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

namespace base {

namespace {

/// The kernel's struct sched_attr (include/uapi/linux/sched/types.h), its second version:
/// glibc before 2.41 declares neither it nor the calls, and the kernel's header clashes with
/// glibc's <sched.h>.
struct SchedAttr {
    uint32_t size;
    uint32_t policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime; ///< a normal task's slice, in nanoseconds (Linux 6.12 on)
    uint64_t deadline;
    uint64_t period;
    uint32_t utilMin;
    uint32_t utilMax;
};
static_assert(sizeof(SchedAttr) == 56, "SCHED_ATTR_SIZE_VER1");

} // namespace

void wakePromptly() {
    SchedAttr attr{};
    if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0)
        return;
    if (attr.policy != SCHED_OTHER && attr.policy != SCHED_BATCH)
        return;
    attr.size = sizeof attr;
    attr.runtime = kPromptSliceNs;
    // The utilisation clamps are left as they are unless their flags are passed.
    (void)syscall(SYS_sched_setattr, 0, &attr, 0);
}

} // namespace base
