#pragma once
/// \file
/// A fault sweep's plan (fault_sweep.h) on the mock driver, whose calls a test cannot wrap: they
/// run in mock.so as the registry loads it. The driver's own fault injection stands in: a run
/// that fails call i configures "<operation> <n> <ERRNO>" (the n-th call of that operation), a run
/// that fails nothing only counts, and the counts become the run's calls.

#include "fault_sweep.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mocktest {

class MockFaultPlan {
public:
    explicit MockFaultPlan(std::string root) : root_(std::move(root)) {}
    /// Before a run: the fault `plan` asks for, or counting only.
    void configure(const faultsweep::FaultPlan& plan);
    /// After it: the driver's counts into `plan` (a run without a fault sets the calls that the
    /// sweep's indexes name), and the faults cleared.
    void collect(faultsweep::FaultPlan& plan);

private:
    std::string root_;
    std::vector<std::string> calls_;
    uint64_t nthOfTarget_ = 0;
};

} // namespace mocktest
