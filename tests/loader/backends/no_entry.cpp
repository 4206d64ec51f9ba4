// A perfectly loadable shared library that is not a backend: it has no entry point.
extern "C" __attribute__((visibility("default"))) int criu_amdgpu_test_not_a_backend(void) {
    return 42;
}
