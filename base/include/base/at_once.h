#pragma once
/// \file
/// Work of several GPUs (or lanes) run at once, each on a quiet thread (quiet_thread.h).

#include "base/result.h"

#include <cstddef>
#include <functional>

namespace base {

/// Runs work(i) for each i below `count`: on this thread when `count` is 1, else each on a quiet
/// thread of its own, all at once. Returns the first error in index order, the others logged.
Result<void> runAtOnce(size_t count, const std::function<Result<void>(size_t)>& work);

} // namespace base
