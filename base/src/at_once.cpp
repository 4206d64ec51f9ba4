#include "base/at_once.h"

#include "base/log.h"
#include "base/quiet_thread.h"

#include <optional>
#include <thread>
#include <vector>

namespace base {

Result<void> runAtOnce(size_t count, const std::function<Result<void>(size_t)>& work) {
    if (count == 1)
        return work(0);
    std::vector<std::optional<Result<void>>> results(count);
    std::vector<std::thread> threads;
    threads.reserve(count);
    for (size_t i = 0; i < count; ++i)
        threads.push_back(quietThread([&, i] { results[i].emplace(work(i)); }));
    for (std::thread& t : threads)
        t.join();
    std::optional<Error> first;
    for (auto& r : results)
        if (!r->ok()) {
            if (!first)
                first = std::move(r->error());
            else
                HAL_LOG_ERROR("%s", r->error().describe().c_str());
        }
    if (first)
        return std::move(*first);
    return success();
}

} // namespace base
