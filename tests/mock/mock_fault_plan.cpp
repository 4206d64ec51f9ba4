#include "mock_fault_plan.h"

#include "mockgpu/faults.h"
#include "temp_dir.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace mocktest {

void MockFaultPlan::configure(const faultsweep::FaultPlan& plan) {
    auto cleared = mock::clearFaults(root_);
    ASSERT_TRUE(cleared.ok()) << cleared.error().describe();
    size_t target = plan.target();
    if (target >= calls_.size()) {
        testsupport::writeFile(root_ + "/faults", "# counting the calls\n");
        return;
    }
    const std::string& op = calls_[target];
    nthOfTarget_ = static_cast<uint64_t>(
        std::count(calls_.begin(), calls_.begin() + static_cast<long>(target) + 1, op));
    auto added = mock::addErrnoFault(root_, op, std::to_string(nthOfTarget_), plan.error());
    ASSERT_TRUE(added.ok()) << added.error().describe();
}

void MockFaultPlan::collect(faultsweep::FaultPlan& plan) {
    size_t target = plan.target();
    std::string failedOp = target < calls_.size() ? calls_[target] : "";
    for (const std::string& op : mock::faultOperations()) {
        uint64_t n = mock::countedCalls(root_, op);
        for (uint64_t i = 1; i <= n; ++i)
            plan.record(op, op == failedOp && i == nthOfTarget_);
    }
    if (target >= calls_.size())
        calls_ = plan.calls();
    (void)mock::clearFaults(root_);
}

} // namespace mocktest
