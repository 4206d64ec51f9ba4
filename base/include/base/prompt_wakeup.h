#pragma once
/// \file
/// For threads that wait on the disk and must act as soon as it answers, such as the
/// write-behind's worker (formats/src/write_behind.h), which sends the next frame once a write
/// ends. It is woken while the lane's other threads seal or copy on every core; if it then waits
/// for its turn on a CPU, the disk stands idle meanwhile.

namespace base {

/// The slice the scheduler is asked for (nanoseconds): the shortest EEVDF takes.
constexpr unsigned long long kPromptSliceNs = 100'000;

/// Asks the scheduler to run the calling thread promptly when it wakes: a slice of
/// kPromptSliceNs instead of the default (about 1 to 3 ms), which lets a waking thread preempt
/// the one running (Linux 6.12 on, `sched_setattr`'s `sched_runtime` for a normal task; no
/// privilege needed). Its share of the CPU is unchanged: a thread that runs long just runs in
/// shorter turns. Its policy and nice value are kept; a thread under a real-time, deadline or
/// idle policy is left alone. Older kernels ignore the request, and a refusal (a seccomp
/// profile) is ignored too: this is a hint.
void wakePromptly();

} // namespace base
