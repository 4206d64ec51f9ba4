#pragma once
// The libdrm_amdgpu calls of DriverKernel's SDMA copies, run by the driver's engine
// (kfddriver::LibdrmCall). Internal to the kfd backend.
#include "driver_link.h"
#include "sdma/libdrm.h"

#include <map>
#include <memory>
#include <mutex>

namespace kfd {

std::unique_ptr<sdma::Libdrm> makeDriverLibdrm(DriverLink& link);

} // namespace kfd
