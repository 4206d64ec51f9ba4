/* A stand-in for a broken amdgpu_plugin.so, for selftest.sh: it loads as every criu plugin does
 * and fails criu's restore at its start (the init of the restore stage returns an error), so
 * every zdtm test fails at restore with it. It proves that run.sh fails an entry when the plugin
 * harms a test that passes without it. Written against criu 3.17's descriptor, which every criu
 * accepts. */
#include "plugin_desc_317.h"

enum { STAGE_RESTORE = 2 }; /* criu's CR_PLUGIN_STAGE__RESTORE */

static int init(int stage) {
    return stage == STAGE_RESTORE ? -1 : 0;
}
static void fini(int stage, int ret) {
    (void)stage;
    (void)ret;
}

E2E_PLUGIN("amdgpu_plugin", init, fini, {0});
