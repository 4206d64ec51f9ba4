/* The plugin descriptor of criu 3.17's plugin ABI (10 hooks), which every later criu accepts:
 * for the test plugins of the e2e scenarios, written without criu's headers. */
#ifndef E2E_PLUGIN_DESC_317_H
#define E2E_PLUGIN_DESC_317_H

struct desc {
    const char* name;
    int (*init)(int);
    void (*exit)(int, int);
    unsigned int version;
    unsigned int max_hooks;
    void* hooks[10];
};

/* Declares the exported descriptor of plugin NAME with INIT, FINI and the ten HOOKS. */
#define E2E_PLUGIN(NAME, INIT, FINI, ...)                                                          \
    __attribute__((visibility("default"))) struct desc CR_PLUGIN_DESC = {                          \
        NAME, INIT, FINI, 0x000200, 10, __VA_ARGS__}

#endif
