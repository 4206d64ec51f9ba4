// A backend library linked with an undefined data symbol: dlopen must fail even with RTLD_LAZY
// (data relocations are never lazy), and the loader must skip it with the linker's message.
#include "hal/backend.h"

extern "C" __attribute__((visibility("default"))) int criu_amdgpu_test_missing_variable;

extern "C" __attribute__((visibility("default"))) int criu_amdgpu_test_read_missing(void) {
    return criu_amdgpu_test_missing_variable;
}

extern "C" __attribute__((visibility("default"))) const CriuAmdgpuBackendDescriptor*
criu_amdgpu_backend_entry(void) {
    return nullptr;
}
