/* Preloaded into criu with the ASan runtime by the ASan build's criu wrapper
 * (build-asan/sanitizer/criu, from cmake/criu-asan.sh.in): makes freelocale() a no-op in criu's
 * process.
 *
 * Why: with bookworm's ASan runtime preloaded, every criu of Debian's (4.1.1, 4.2.1, 4.3) hangs
 * for ever after "Dumping finished successfully", in its exit handlers: _dl_fini runs
 * libp11-kit's destructor (p11-kit is loaded by criu's gnutls), which calls freelocale(), which
 * waits on libc's locale lock, held by nobody who will ever release it. The plugin has been
 * unloaded by then; only the process's last frees are skipped. Without this the e2e scenarios
 * could not run under ASan at all. */
#include <locale.h>

void freelocale(locale_t locale) {
    (void)locale;
}
