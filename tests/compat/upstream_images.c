/*
 * An independent reader and writer of amdgpu checkpoint images, following the rules of CRIU's
 * own amdgpu plugin, built at test time against the protobuf-c code generated from the plugin's
 * schema (plugins/amdgpu/criu-amdgpu.proto of Debian's criu source). Nothing here shares code
 * with the project: it is the other side of the conformance suite.
 *
 * The rules it follows (criu's plugins/amdgpu, criu 4.1.1, 4.2.1 and the development branch):
 * - open_img_file() puts an 8-byte host-endian size_t before every image file.
 * - A protobuf image is that size, then exactly that many bytes of the packed message
 *   (read_fp() of the announced size, then *__unpack()).
 * - amdgpu-kfd-<id>.img holds criu_kfd; device_entries are num_of_gpus + num_of_cpus long, the
 *   GPU entries have gpu_id != 0; bo_entries are num_of_bos long.
 * - amdgpu-pages-<id>-<gpu_id %04x>.img exists for every GPU device entry; its header is the sum
 *   of the sizes of that GPU's BOs whose alloc_flags have VRAM or GTT (restore fails on any
 *   other value), then those BOs' bytes in bo_entries order.
 * - amdgpu-renderD-<id>.img holds criu_render_node. Where the schema lists BOs (development
 *   branch), restore opens amdgpu-drm-pages-<id>-<drm_render_minor>-<index %04x>.img for each
 *   BO whose preferred_domains have VRAM or GTT and that has mappings, reads the header and
 *   skips it, then reads the BO's size in bytes.
 * - amdgpu-dmabuf_<id>.img holds criu_dmabuf_node (development branch).
 *
 * Fields are reached through the generated descriptors, by name, so one source serves every
 * schema version: fields a version lacks are simply absent.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <protobuf-c/protobuf-c.h>

/* Descriptors of the generated code; weak, as a schema version may lack a message. */
extern const ProtobufCMessageDescriptor criu_kfd__descriptor __attribute__((weak));
extern const ProtobufCMessageDescriptor criu_render_node__descriptor __attribute__((weak));
extern const ProtobufCMessageDescriptor criu_dmabuf_node__descriptor __attribute__((weak));

#define KFD_ALLOC_VRAM (1u << 0) /* KFD_IOC_ALLOC_MEM_FLAGS_VRAM */
#define KFD_ALLOC_GTT (1u << 1)  /* KFD_IOC_ALLOC_MEM_FLAGS_GTT */
#define GEM_DOMAIN_GTT 0x2u      /* AMDGPU_GEM_DOMAIN_GTT */
#define GEM_DOMAIN_VRAM 0x4u     /* AMDGPU_GEM_DOMAIN_VRAM */
#define HEADER_BYTES 8           /* sizeof(size_t) on the 64-bit hosts criu supports */

static int failures;

static void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("FAIL: ", stdout);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    failures++;
}

static void die(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void* xcalloc(size_t n, size_t size) {
    void* p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        die("out of memory");
    return p;
}

/* ------------------------------------------------------------------ reflection on messages */

static const ProtobufCFieldDescriptor* field_of(const ProtobufCMessageDescriptor* d,
                                                const char* name) {
    return protobuf_c_message_descriptor_get_field_by_name(d, name);
}

static bool schema_has(const ProtobufCMessageDescriptor* d, const char* name) {
    return field_of(d, name) != NULL;
}

static uint64_t get_uint(const ProtobufCMessage* m, const char* name) {
    const ProtobufCFieldDescriptor* f = field_of(m->descriptor, name);
    const char* base = (const char*)m;
    if (!f)
        die("%s has no field %s", m->descriptor->name, name);
    switch (f->type) {
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_BOOL:
        return *(const uint32_t*)(base + f->offset);
    case PROTOBUF_C_TYPE_UINT64:
        return *(const uint64_t*)(base + f->offset);
    default:
        die("%s.%s is not an unsigned integer", m->descriptor->name, name);
    }
}

/* Sets a scalar field the schema has (and its has_ flag when optional); false when absent. */
static bool set_uint(ProtobufCMessage* m, const char* name, uint64_t v) {
    const ProtobufCFieldDescriptor* f = field_of(m->descriptor, name);
    char* base = (char*)m;
    if (!f)
        return false;
    if (f->type == PROTOBUF_C_TYPE_UINT64)
        *(uint64_t*)(base + f->offset) = v;
    else
        *(uint32_t*)(base + f->offset) = (uint32_t)v;
    if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset)
        *(protobuf_c_boolean*)(base + f->quantifier_offset) = 1;
    return true;
}

static size_t get_repeated(const ProtobufCMessage* m, const char* name, ProtobufCMessage*** items) {
    const ProtobufCFieldDescriptor* f = field_of(m->descriptor, name);
    const char* base = (const char*)m;
    if (!f) {
        *items = NULL;
        return 0;
    }
    *items = *(ProtobufCMessage***)(base + f->offset);
    return *(const size_t*)(base + f->quantifier_offset);
}

static ProtobufCMessage* new_message(const ProtobufCMessageDescriptor* d) {
    ProtobufCMessage* m = xcalloc(1, d->sizeof_message);
    d->message_init(m);
    return m;
}

/* A fresh element of repeated message field `name` of `m`, appended (capacity `cap`). */
static ProtobufCMessage* append(ProtobufCMessage* m, const char* name, size_t cap) {
    const ProtobufCFieldDescriptor* f = field_of(m->descriptor, name);
    char* base = (char*)m;
    ProtobufCMessage*** arr = (ProtobufCMessage***)(base + f->offset);
    size_t* n = (size_t*)(base + f->quantifier_offset);
    if (!*arr)
        *arr = xcalloc(cap, sizeof(**arr));
    if (*n >= cap)
        die("too many %s", name);
    (*arr)[*n] = new_message(f->descriptor);
    return (*arr)[(*n)++];
}

/* Every required scalar field of `m` and its sub-messages must be one this writer set. */
static void check_required_known(const ProtobufCMessage* m, const char* const* known) {
    const ProtobufCMessageDescriptor* d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor* f = &d->fields[i];
        bool ok = false;
        if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            ProtobufCMessage** items;
            size_t n = get_repeated(m, f->name, &items);
            for (size_t j = 0; j < n; j++)
                check_required_known(items[j], known);
            continue;
        }
        if (f->label != PROTOBUF_C_LABEL_REQUIRED)
            continue;
        for (const char* const* k = known; *k; k++)
            ok = ok || !strcmp(*k, f->name) ||
                 (!strncmp(*k, d->name, strlen(d->name)) && (*k)[strlen(d->name)] == '.' &&
                  !strcmp(*k + strlen(d->name) + 1, f->name));
        if (!ok)
            die("the schema requires %s.%s, which this writer does not know how to fill", d->name,
                f->name);
    }
}

/* ------------------------------------------------------------------- files, framed or not */

static char* path_in(const char* dir, const char* name) {
    char* p;
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        die("out of memory");
    return p;
}

/* open_img_file() for reading: the header, then the file positioned at the contents. */
static FILE* open_img(const char* dir, const char* name, uint64_t* announced, uint64_t* contents) {
    char* path = path_in(dir, name);
    FILE* fp = fopen(path, "rb");
    struct stat st;
    free(path);
    if (!fp)
        return NULL;
    if (fstat(fileno(fp), &st) || (uint64_t)st.st_size < HEADER_BYTES ||
        fread(announced, HEADER_BYTES, 1, fp) != 1) {
        fail("%s: no 8-byte size header (%lld bytes)", name, (long long)st.st_size);
        fclose(fp);
        return NULL;
    }
    *contents = (uint64_t)st.st_size - HEADER_BYTES;
    return fp;
}

static ProtobufCMessage* read_message(const char* dir, const char* name,
                                      const ProtobufCMessageDescriptor* d) {
    uint64_t size, contents;
    uint8_t* buf;
    ProtobufCMessage* m;
    FILE* fp = open_img(dir, name, &size, &contents);
    if (!fp) {
        fail("%s: missing or unreadable", name);
        return NULL;
    }
    if (size != contents) {
        fail("%s: header announces %" PRIu64 " bytes of %s, the file holds %" PRIu64 " after it",
             name, size, d->name, contents);
        fclose(fp);
        return NULL;
    }
    buf = xcalloc(size, 1);
    if (size && fread(buf, size, 1, fp) != 1)
        die("reading %s", name);
    fclose(fp);
    m = protobuf_c_message_unpack(d, NULL, size, buf);
    free(buf);
    if (!m)
        fail("%s: does not unpack as %s (a required field missing, or not that message)", name,
             d->name);
    return m;
}

static void write_file(const char* dir, const char* name, const void* header, const void* data,
                       size_t len) {
    char* path = path_in(dir, name);
    FILE* fp = fopen(path, "wb");
    if (!fp || (header && fwrite(header, HEADER_BYTES, 1, fp) != 1) ||
        (len && fwrite(data, len, 1, fp) != 1) || fclose(fp))
        die("writing %s", path);
    free(path);
}

/* write_img_file(): the header announcing the packed size, then the message. */
static void write_message(const char* dir, const char* name, const ProtobufCMessage* m) {
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t* buf = xcalloc(len, 1);
    uint64_t header = len;
    protobuf_c_message_pack(m, buf);
    write_file(dir, name, &header, buf, len);
    free(buf);
}

/* ---------------------------------------------------------------------- generated contents */

/* Byte `offset` of BO `index`: what the writer puts in pages files and the restore must give. */
static uint8_t content_byte(uint64_t index, uint64_t offset) {
    uint64_t x = (index + 1) * 0x9e3779b97f4a7c15ull + (offset / 8) * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    return (uint8_t)(x >> ((offset % 8) * 8));
}

/* ------------------------------------------------------------------------------------ check */

struct seen {
    char** names;
    size_t n;
};

static void mark(struct seen* s, const char* name) {
    s->names = realloc(s->names, (s->n + 1) * sizeof(char*));
    if (!s->names)
        die("out of memory");
    s->names[s->n++] = strdup(name);
}

static bool marked(const struct seen* s, const char* name) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->names[i], name))
            return true;
    return false;
}

struct counts {
    unsigned kfd, pages, render, drm_pages, dmabuf;
    uint64_t content_bytes;
};

/* Reads `len` contents bytes of `fp` and compares them with `expect_path` (when given). */
static void compare_contents(FILE* fp, uint64_t len, const char* expect_dir,
                             const char* expect_name, const char* what) {
    char* path = expect_dir ? path_in(expect_dir, expect_name) : NULL;
    FILE* exp = path ? fopen(path, "rb") : NULL;
    uint8_t a[65536], b[65536];
    uint64_t done = 0;
    if (path && !exp)
        fail("%s: no expected contents %s", what, path);
    while (done < len) {
        size_t n = len - done < sizeof(a) ? (size_t)(len - done) : sizeof(a);
        if (fread(a, n, 1, fp) != 1) {
            fail("%s: short read", what);
            break;
        }
        if (exp && fread(b, n, 1, exp) != 1) {
            fail("%s: the expected contents are shorter than %" PRIu64, what, len);
            fclose(exp);
            exp = NULL;
        }
        if (exp && memcmp(a, b, n)) {
            fail("%s: bytes %" PRIu64 "..%" PRIu64 " differ from the process's", what, done,
                 done + n);
            fclose(exp);
            exp = NULL;
        }
        done += n;
    }
    if (exp) {
        if (fgetc(exp) != EOF)
            fail("%s: the expected contents are longer than %" PRIu64, what, len);
        fclose(exp);
    }
    free(path);
}

static void check_kfd(const char* dir, unsigned id, const char* expect, struct seen* seen,
                      struct counts* c) {
    char name[64];
    ProtobufCMessage *e, **devs, **bos;
    size_t ndev, nbo;
    snprintf(name, sizeof(name), "amdgpu-kfd-%u.img", id);
    mark(seen, name);
    e = read_message(dir, name, &criu_kfd__descriptor);
    if (!e)
        return;
    c->kfd++;
    ndev = get_repeated(e, "device_entries", &devs);
    nbo = get_repeated(e, "bo_entries", &bos);
    if (get_uint(e, "num_of_gpus") + get_uint(e, "num_of_cpus") != ndev)
        fail("%s: num_of_gpus + num_of_cpus = %" PRIu64 ", %zu device entries", name,
             get_uint(e, "num_of_gpus") + get_uint(e, "num_of_cpus"), ndev);
    if (get_uint(e, "num_of_bos") != nbo)
        fail("%s: num_of_bos %" PRIu64 ", %zu BO entries", name, get_uint(e, "num_of_bos"), nbo);
    for (size_t d = 0; d < ndev; d++) {
        uint32_t gpu = (uint32_t)get_uint(devs[d], "gpu_id");
        uint64_t sum = 0, header, contents;
        FILE* fp;
        char pages[64];
        if (!gpu)
            continue;
        for (size_t b = 0; b < nbo; b++)
            if (get_uint(bos[b], "gpu_id") == gpu &&
                (get_uint(bos[b], "alloc_flags") & (KFD_ALLOC_VRAM | KFD_ALLOC_GTT)))
                sum += get_uint(bos[b], "size");
        snprintf(pages, sizeof(pages), "amdgpu-pages-%u-%04x.img", id, gpu);
        mark(seen, pages);
        fp = open_img(dir, pages, &header, &contents);
        if (!fp) {
            fail("%s: missing: GPU 0x%04x has a device entry in %s", pages, gpu, name);
            continue;
        }
        if (header != sum)
            fail("%s: header %" PRIu64 ", the VRAM/GTT BOs of GPU 0x%04x sum to %" PRIu64
                 " (criu: size mismatch)",
                 pages, header, gpu, sum);
        if (contents != sum)
            fail("%s: %" PRIu64 " bytes follow the header, its BOs hold %" PRIu64, pages, contents,
                 sum);
        for (size_t b = 0; b < nbo && header == sum && contents == sum; b++) {
            char exp[64], what[96];
            if (get_uint(bos[b], "gpu_id") != gpu ||
                !(get_uint(bos[b], "alloc_flags") & (KFD_ALLOC_VRAM | KFD_ALLOC_GTT)))
                continue;
            snprintf(exp, sizeof(exp), "kfd-%u-bo-%zu.bin", id, b);
            snprintf(what, sizeof(what), "%s, BO %zu", pages, b);
            compare_contents(fp, get_uint(bos[b], "size"), expect, exp, what);
        }
        fclose(fp);
        c->pages++;
        c->content_bytes += contents;
    }
    protobuf_c_message_free_unpacked(e, NULL);
}

static void check_render(const char* dir, unsigned id, const char* expect, struct seen* seen,
                         struct counts* c) {
    char name[64];
    ProtobufCMessage *rd, **bos;
    size_t nbo;
    snprintf(name, sizeof(name), "amdgpu-renderD-%u.img", id);
    mark(seen, name);
    rd = read_message(dir, name, &criu_render_node__descriptor);
    if (!rd)
        return;
    c->render++;
    nbo = get_repeated(rd, "bo_entries", &bos);
    if (schema_has(rd->descriptor, "num_of_bos") && get_uint(rd, "num_of_bos") != nbo)
        fail("%s: num_of_bos %" PRIu64 ", %zu BO entries", name, get_uint(rd, "num_of_bos"), nbo);
    for (size_t b = 0; b < nbo; b++) {
        char pages[80], exp[64], what[112];
        uint64_t header, contents, size = get_uint(bos[b], "size");
        FILE* fp;
        ProtobufCMessage** vms;
        if (get_repeated(bos[b], "vm_entries", &vms) != get_uint(bos[b], "num_of_vms"))
            fail("%s: BO %zu: num_of_vms disagrees with its mappings", name, b);
        if (!(get_uint(bos[b], "preferred_domains") & (GEM_DOMAIN_VRAM | GEM_DOMAIN_GTT)) ||
            !get_uint(bos[b], "num_of_vms"))
            continue; /* restore opens no file for it */
        snprintf(pages, sizeof(pages), "amdgpu-drm-pages-%u-%u-%04zx.img", id,
                 (unsigned)get_uint(rd, "drm_render_minor"), b);
        mark(seen, pages);
        fp = open_img(dir, pages, &header, &contents);
        if (!fp) {
            fail("%s: missing: BO %zu of %s is restored from it", pages, b, name);
            continue;
        }
        (void)header; /* read and skipped, as criu's restore does */
        if (contents != size)
            fail("%s: %" PRIu64 " bytes follow the header, BO %zu holds %" PRIu64, pages, contents,
                 b, size);
        snprintf(exp, sizeof(exp), "drm-%u-bo-%zu.bin", id, b);
        snprintf(what, sizeof(what), "%s", pages);
        if (contents == size)
            compare_contents(fp, size, expect, exp, what);
        fclose(fp);
        c->drm_pages++;
        c->content_bytes += contents;
    }
    protobuf_c_message_free_unpacked(rd, NULL);
}

static void check_dmabuf(const char* dir, unsigned id, struct seen* seen, struct counts* c) {
    char name[64];
    ProtobufCMessage* m;
    snprintf(name, sizeof(name), "amdgpu-dmabuf_%u.img", id);
    mark(seen, name);
    if (!&criu_dmabuf_node__descriptor) {
        printf("note: %s: this schema has no criu_dmabuf_node\n", name);
        return;
    }
    m = read_message(dir, name, &criu_dmabuf_node__descriptor);
    if (m) {
        c->dmabuf++;
        protobuf_c_message_free_unpacked(m, NULL);
    }
}

static unsigned parse_min(const char* arg, const char* opt) {
    char* end;
    unsigned long v = strtoul(arg, &end, 10);
    if (*end)
        die("%s wants a number", opt);
    return (unsigned)v;
}

static int cmd_check(int argc, char** argv) {
    const char *dir, *expect = NULL;
    struct counts c = {0}, min = {0};
    struct seen seen = {0};
    DIR* d;
    struct dirent* ent;
    if (argc < 1)
        die("check DIR [--expect DIR] [--min-kfd N] [--min-pages N] [--min-render N] "
            "[--min-drm-pages N] [--min-dmabuf N]");
    dir = argv[0];
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--expect"))
            expect = argv[i + 1];
        else if (!strcmp(argv[i], "--min-kfd"))
            min.kfd = parse_min(argv[i + 1], argv[i]);
        else if (!strcmp(argv[i], "--min-pages"))
            min.pages = parse_min(argv[i + 1], argv[i]);
        else if (!strcmp(argv[i], "--min-render"))
            min.render = parse_min(argv[i + 1], argv[i]);
        else if (!strcmp(argv[i], "--min-drm-pages"))
            min.drm_pages = parse_min(argv[i + 1], argv[i]);
        else if (!strcmp(argv[i], "--min-dmabuf"))
            min.dmabuf = parse_min(argv[i + 1], argv[i]);
        else
            die("unknown option %s", argv[i]);
    }
    d = opendir(dir);
    if (!d)
        die("cannot open %s", dir);
    while ((ent = readdir(d))) {
        unsigned id;
        char tail;
        if (sscanf(ent->d_name, "amdgpu-kfd-%u.im%c", &id, &tail) == 2 && tail == 'g')
            check_kfd(dir, id, expect, &seen, &c);
        else if (sscanf(ent->d_name, "amdgpu-renderD-%u.im%c", &id, &tail) == 2 && tail == 'g')
            check_render(dir, id, expect, &seen, &c);
        else if (sscanf(ent->d_name, "amdgpu-dmabuf_%u.im%c", &id, &tail) == 2 && tail == 'g')
            check_dmabuf(dir, id, &seen, &c);
    }
    rewinddir(d);
    while ((ent = readdir(d))) {
        if (strncmp(ent->d_name, "amdgpu-", 7) || marked(&seen, ent->d_name))
            continue;
        if (!strncmp(ent->d_name, "amdgpu-pages-", 13))
            fail("%s: no device entry of a KFD image names it", ent->d_name);
        else
            printf("note: %s: not an image of this schema's plugin (it never opens it)\n",
                   ent->d_name);
    }
    closedir(d);
    printf(
        "checked: %u KFD images, %u pages files, %u render-node images, %u render-node BO files, "
        "%u dmabuf images, %" PRIu64 " bytes of contents\n",
        c.kfd, c.pages, c.render, c.drm_pages, c.dmabuf, c.content_bytes);
    if (c.kfd < min.kfd || c.pages < min.pages || c.render < min.render ||
        c.drm_pages < min.drm_pages || c.dmabuf < min.dmabuf)
        fail("fewer images than the test expects (at least %u, %u, %u, %u, %u)", min.kfd, min.pages,
             min.render, min.drm_pages, min.dmabuf);
    if (failures)
        printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
}

/* -------------------------------------------------------------------------------- write-kfd */

/* One "name value" line of a sysfs properties file. */
static bool sysfs_prop(const char* file, const char* key, uint64_t* value) {
    FILE* fp = fopen(file, "r");
    char name[128];
    unsigned long long v;
    bool found = false;
    if (!fp)
        return false;
    while (!found && fscanf(fp, "%127s %llu", name, &v) == 2)
        if (!strcmp(name, key)) {
            *value = v;
            found = true;
        }
    fclose(fp);
    return found;
}

static uint64_t sysfs_u64(const char* dir, const char* file, const char* key) {
    char* path = path_in(dir, file);
    uint64_t v = 0;
    if (key ? !sysfs_prop(path, key, &v) : false)
        die("%s has no %s", path, key);
    if (!key) {
        FILE* fp = fopen(path, "r");
        unsigned long long x;
        if (!fp || fscanf(fp, "%llu", &x) != 1)
            die("cannot read %s", path);
        fclose(fp);
        v = x;
    }
    free(path);
    return v;
}

/* The GPU properties criu's topology_to_devinfo() copies from sysfs, by the same names. */
static const char* const gpu_props[] = {"simd_count",
                                        "mem_banks_count",
                                        "caches_count",
                                        "io_links_count",
                                        "max_waves_per_simd",
                                        "lds_size_in_kb",
                                        "num_gws",
                                        "wave_front_size",
                                        "array_count",
                                        "simd_arrays_per_engine",
                                        "cu_per_simd_array",
                                        "simd_per_cu",
                                        "max_slots_scratch_cu",
                                        "vendor_id",
                                        "device_id",
                                        "domain",
                                        "drm_render_minor",
                                        "hive_id",
                                        "num_sdma_engines",
                                        "num_sdma_xgmi_engines",
                                        "num_sdma_queues_per_engine",
                                        "num_cp_queues",
                                        "fw_version",
                                        "capability",
                                        "sdma_fw_version",
                                        NULL};

static const char* const written_fields[] = {
    /* kfd_device_entry */
    "node_id", "gpu_id", "cpu_cores_count", "simd_count", "mem_banks_count", "caches_count",
    "io_links_count", "max_waves_per_simd", "lds_size_in_kb", "gds_size_in_kb", "num_gws",
    "wave_front_size", "array_count", "simd_arrays_per_engine", "cu_per_simd_array", "simd_per_cu",
    "max_slots_scratch_cu", "vendor_id", "device_id", "domain", "drm_render_minor", "hive_id",
    "num_sdma_engines", "num_sdma_xgmi_engines", "num_sdma_queues_per_engine", "num_cp_queues",
    "fw_version", "capability", "sdma_fw_version", "vram_public", "vram_size",
    /* dev_iolink */
    "type", "node_to_id",
    /* kfd_bo_entry (handle: development branch) */
    "addr", "size", "offset", "alloc_flags", "handle",
    /* criu_kfd */
    "pid", "num_of_gpus", "num_of_cpus", "num_of_bos", "num_of_objects", "shared_mem_size",
    "shared_mem_magic", "priv_data",
    /* criu_render_node (id, drm_render_minor, num_of_bos: development branch) */
    "id", NULL};

/* A node's device entry as criu's topology parser and topology_to_devinfo() fill it. */
static void fill_device_entry(ProtobufCMessage* dev, const char* nodes, unsigned node,
                              uint32_t gpu_id) {
    char rel[64], *node_dir;
    DIR* d;
    struct dirent* ent;
    snprintf(rel, sizeof(rel), "%u", node);
    node_dir = path_in(nodes, rel);
    set_uint(dev, "node_id", node);
    set_uint(dev, "gpu_id", gpu_id);
    if (!gpu_id) {
        set_uint(dev, "cpu_cores_count", sysfs_u64(node_dir, "properties", "cpu_cores_count"));
    } else {
        char* banks = path_in(node_dir, "mem_banks");
        for (const char* const* p = gpu_props; *p; p++)
            set_uint(dev, *p, sysfs_u64(node_dir, "properties", *p));
        /* The first bank of frame-buffer memory (heap type 1 public, 2 private). */
        d = opendir(banks);
        while (d && (ent = readdir(d))) {
            uint64_t heap = 0, size = 0;
            char file[300];
            if (ent->d_name[0] < '0' || ent->d_name[0] > '9')
                continue;
            snprintf(file, sizeof(file), "%s/properties", ent->d_name);
            heap = sysfs_u64(banks, file, "heap_type");
            size = sysfs_u64(banks, file, "size_in_bytes");
            if (heap == 1 || heap == 2) {
                set_uint(dev, "vram_public", heap == 1);
                set_uint(dev, "vram_size", size);
                break;
            }
        }
        if (d)
            closedir(d);
        free(banks);
    }
    {
        char* links = path_in(node_dir, "io_links");
        d = opendir(links);
        while (d && (ent = readdir(d))) {
            char file[300];
            uint64_t type;
            if (ent->d_name[0] < '0' || ent->d_name[0] > '9')
                continue;
            snprintf(file, sizeof(file), "%s/properties", ent->d_name);
            type = sysfs_u64(links, file, "type");
            if (type == 2 || type == 11) { /* PCIe, XGMI: the links criu keeps */
                ProtobufCMessage* l = append(dev, "iolinks", 64);
                set_uint(l, "type", type);
                set_uint(l, "node_to_id", sysfs_u64(links, file, "node_to"));
            }
        }
        if (d)
            closedir(d);
        free(links);
    }
    free(node_dir);
}

struct kernel_bo {
    uint64_t addr, size, offset;
    uint32_t flags, gpu_id;
};

struct kernel_state {
    uint32_t pid, num_objects;
    uint8_t* priv;
    size_t priv_len;
    uint32_t gpus[64];
    size_t ngpus;
    struct kernel_bo bos[256];
    size_t nbos;
};

/* What the kernel's CRIU ops gave for the process (see compat_driver.cpp's kernel-state). */
static void read_kernel_state(const char* path, struct kernel_state* k) {
    FILE* fp = fopen(path, "r");
    char key[32];
    if (!fp)
        die("cannot open %s", path);
    memset(k, 0, sizeof(*k));
    while (fscanf(fp, "%31s", key) == 1) {
        if (!strcmp(key, "pid")) {
            if (fscanf(fp, "%" SCNu32, &k->pid) != 1)
                die("%s: bad pid", path);
        } else if (!strcmp(key, "num_objects")) {
            if (fscanf(fp, "%" SCNu32, &k->num_objects) != 1)
                die("%s: bad num_objects", path);
        } else if (!strcmp(key, "gpu")) {
            if (k->ngpus == 64 || fscanf(fp, "%" SCNx32, &k->gpus[k->ngpus++]) != 1)
                die("%s: bad gpu", path);
        } else if (!strcmp(key, "bo")) {
            struct kernel_bo* b = &k->bos[k->nbos++];
            if (k->nbos > 256 ||
                fscanf(fp, "%" SCNx64 " %" SCNu64 " %" SCNx64 " %" SCNx32 " %" SCNx32, &b->addr,
                       &b->size, &b->offset, &b->flags, &b->gpu_id) != 5)
                die("%s: bad bo", path);
        } else if (!strcmp(key, "priv")) {
            char hex[3] = {0};
            if (fscanf(fp, "%zu", &k->priv_len) != 1 || k->priv_len > (1u << 20))
                die("%s: bad priv", path);
            k->priv = xcalloc(k->priv_len, 1);
            for (size_t i = 0; i < k->priv_len; i++) {
                if (fscanf(fp, " %2c", hex) != 1)
                    die("%s: short priv", path);
                k->priv[i] = (uint8_t)strtoul(hex, NULL, 16);
            }
        } else {
            die("%s: unknown key %s", path, key);
        }
    }
    fclose(fp);
}

static bool in_process(const struct kernel_state* k, uint32_t gpu) {
    for (size_t i = 0; i < k->ngpus; i++)
        if (k->gpus[i] == gpu)
            return true;
    return false;
}

/* Writes the pages file of `gpu` as dump_bo_contents() does, or corrupts it as asked. */
static void write_pages(const char* dir, unsigned id, uint32_t gpu, const struct kernel_state* k,
                        const char* corrupt) {
    char name[64];
    uint64_t sum = 0, header;
    size_t len = 0, at = 0;
    uint8_t* data;
    for (size_t b = 0; b < k->nbos; b++)
        if (k->bos[b].gpu_id == gpu && (k->bos[b].flags & (KFD_ALLOC_VRAM | KFD_ALLOC_GTT)))
            sum += k->bos[b].size;
    snprintf(name, sizeof(name), "amdgpu-pages-%u-%04x.img", id, gpu);
    if (corrupt && !strcmp(corrupt, "missing-gpu-file"))
        return;
    len = (size_t)sum + (corrupt && !strcmp(corrupt, "extra-byte") ? 1 : 0);
    data = xcalloc(len, 1);
    for (size_t b = 0; b < k->nbos; b++) {
        if (k->bos[b].gpu_id != gpu || !(k->bos[b].flags & (KFD_ALLOC_VRAM | KFD_ALLOC_GTT)))
            continue;
        for (uint64_t o = 0; o < k->bos[b].size; o++)
            data[at++] = content_byte(b, o);
    }
    if (len > at)
        data[at] = 0x5a; /* the extra byte */
    header = sum;
    if (corrupt && !strcmp(corrupt, "header-mismatch"))
        header = sum + 4096;
    write_file(dir, name, corrupt && !strcmp(corrupt, "no-header") ? NULL : &header, data, len);
    free(data);
}

static int cmd_write_kfd(int argc, char** argv) {
    const char *dir, *sysfs = NULL, *kernel = NULL, *corrupt = NULL;
    unsigned id = 0, render_id = 0, corrupt_gpu = 0;
    struct kernel_state k;
    ProtobufCMessage* e;
    char *nodes, name[64];
    unsigned ncpus = 0, ngpus = 0;
    if (argc < 1)
        die("write-kfd DIR --sysfs SYSFS --kernel STATE --id ID --render-id ID [--corrupt KIND "
            "--gpu GPU]");
    dir = argv[0];
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sysfs"))
            sysfs = argv[i + 1];
        else if (!strcmp(argv[i], "--kernel"))
            kernel = argv[i + 1];
        else if (!strcmp(argv[i], "--id"))
            id = parse_min(argv[i + 1], argv[i]);
        else if (!strcmp(argv[i], "--render-id"))
            render_id = parse_min(argv[i + 1], argv[i]);
        else if (!strcmp(argv[i], "--corrupt"))
            corrupt = argv[i + 1];
        else if (!strcmp(argv[i], "--gpu"))
            corrupt_gpu = (unsigned)strtoul(argv[i + 1], NULL, 16);
        else
            die("unknown option %s", argv[i]);
    }
    if (!sysfs || !kernel || !id || !render_id)
        die("write-kfd needs --sysfs, --kernel, --id and --render-id");
    read_kernel_state(kernel, &k);
    nodes = path_in(sysfs, "nodes");

    e = new_message(&criu_kfd__descriptor);
    set_uint(e, "pid", k.pid);
    /* Device entries: every node of the topology the process uses, in node order. */
    for (unsigned n = 0;; n++) {
        char rel[64], *gpu_file;
        struct stat st;
        uint64_t gpu_id;
        snprintf(rel, sizeof(rel), "%u/gpu_id", n);
        gpu_file = path_in(nodes, rel);
        if (stat(gpu_file, &st)) {
            free(gpu_file);
            break;
        }
        free(gpu_file);
        snprintf(rel, sizeof(rel), "%u", n);
        {
            char* node_dir = path_in(nodes, rel);
            gpu_id = sysfs_u64(node_dir, "gpu_id", NULL);
            free(node_dir);
        }
        if (gpu_id && !in_process(&k, (uint32_t)gpu_id))
            continue;
        fill_device_entry(append(e, "device_entries", 256), nodes, n, (uint32_t)gpu_id);
        if (gpu_id)
            ngpus++;
        else
            ncpus++;
    }
    set_uint(e, "num_of_gpus", ngpus);
    set_uint(e, "num_of_cpus", ncpus);
    set_uint(e, "num_of_bos", k.nbos);
    for (size_t b = 0; b < k.nbos; b++) {
        ProtobufCMessage* bo = append(e, "bo_entries", 256);
        set_uint(bo, "addr", k.bos[b].addr);
        set_uint(bo, "size", k.bos[b].size);
        set_uint(bo, "offset", k.bos[b].offset);
        set_uint(bo, "alloc_flags", k.bos[b].flags);
        set_uint(bo, "gpu_id", k.bos[b].gpu_id);
        set_uint(bo, "handle", b + 1); /* a GEM handle, where the schema records one */
    }
    set_uint(e, "num_of_objects", k.num_objects);
    set_uint(e, "shared_mem_size", 0);
    set_uint(e, "shared_mem_magic", 0);
    {
        const ProtobufCFieldDescriptor* f = field_of(e->descriptor, "priv_data");
        ProtobufCBinaryData* pd = (ProtobufCBinaryData*)((char*)e + f->offset);
        pd->len = k.priv_len;
        pd->data = k.priv;
        if (f->label == PROTOBUF_C_LABEL_OPTIONAL)
            *(protobuf_c_boolean*)((char*)e + f->quantifier_offset) = 1;
    }
    check_required_known(e, written_fields);
    snprintf(name, sizeof(name), "amdgpu-kfd-%u.img", id);
    write_message(dir, name, e);
    printf("wrote %s with %zu BOs, %u GPUs, %u CPUs (schema: kfd_bo_entry %s handle, "
           "criu_render_node %s "
           "BOs)\n",
           name, k.nbos, ngpus, ncpus,
           schema_has(field_of(e->descriptor, "bo_entries")->descriptor, "handle") ? "with"
                                                                                   : "without",
           schema_has(&criu_render_node__descriptor, "bo_entries") ? "with" : "without");

    /* One pages file per GPU device entry, and one render node per GPU (files id, id+1, ...). */
    {
        ProtobufCMessage** devs;
        size_t ndev = get_repeated(e, "device_entries", &devs);
        unsigned r = render_id;
        for (size_t d = 0; d < ndev; d++) {
            uint32_t gpu = (uint32_t)get_uint(devs[d], "gpu_id");
            ProtobufCMessage* rd;
            if (!gpu)
                continue;
            write_pages(dir, id, gpu, &k, corrupt && gpu == corrupt_gpu ? corrupt : NULL);
            rd = new_message(&criu_render_node__descriptor);
            set_uint(rd, "gpu_id", gpu);
            set_uint(rd, "id", r);
            set_uint(rd, "drm_render_minor", get_uint(devs[d], "drm_render_minor"));
            set_uint(rd, "num_of_bos", 0);
            check_required_known(rd, written_fields);
            snprintf(name, sizeof(name), "amdgpu-renderD-%u.img", r++);
            write_message(dir, name, rd);
            free(rd);
        }
    }
    free(nodes);
    return 0;
}

/* -------------------------------------------------------------------------- verify-restored */

/* RESTORED/bo-<index>.bin must hold what write-kfd put in the pages files for BO <index>. */
static int cmd_verify_restored(int argc, char** argv) {
    const char *dir, *restored;
    unsigned id;
    char name[64];
    ProtobufCMessage *e, **bos;
    size_t nbo, compared = 0;
    uint64_t bytes = 0;
    if (argc != 3)
        die("verify-restored DIR RESTORED ID");
    dir = argv[0];
    restored = argv[1];
    id = parse_min(argv[2], "ID");
    snprintf(name, sizeof(name), "amdgpu-kfd-%u.img", id);
    e = read_message(dir, name, &criu_kfd__descriptor);
    if (!e)
        return 1;
    nbo = get_repeated(e, "bo_entries", &bos);
    for (size_t b = 0; b < nbo; b++) {
        char file[64];
        char* path;
        FILE* fp;
        uint64_t size = get_uint(bos[b], "size");
        if (!(get_uint(bos[b], "alloc_flags") & (KFD_ALLOC_VRAM | KFD_ALLOC_GTT)))
            continue;
        snprintf(file, sizeof(file), "bo-%zu.bin", b);
        path = path_in(restored, file);
        fp = fopen(path, "rb");
        if (!fp) {
            fail("BO %zu: nothing restored (%s)", b, path);
            free(path);
            continue;
        }
        bool same = true;
        for (uint64_t o = 0; same && o < size; o++) {
            int ch = fgetc(fp);
            if (ch == EOF || (uint8_t)ch != content_byte(b, o)) {
                fail("BO %zu: restored byte %" PRIu64 " is not the one in its pages file", b, o);
                same = false;
            }
        }
        if (same && fgetc(fp) != EOF)
            fail("BO %zu: more than its %" PRIu64 " bytes restored", b, size);
        fclose(fp);
        free(path);
        compared++;
        bytes += size;
    }
    printf("compared: %zu BOs, %" PRIu64 " bytes, with the pages files\n", compared, bytes);
    if (!compared)
        fail("no BO with contents to compare");
    protobuf_c_message_free_unpacked(e, NULL);
    return failures ? 1 : 0;
}

int main(int argc, char** argv) {
    if (!&criu_kfd__descriptor || !&criu_render_node__descriptor)
        die("the generated code lacks criu_kfd or criu_render_node");
    if (argc >= 2 && !strcmp(argv[1], "check"))
        return cmd_check(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "write-kfd"))
        return cmd_write_kfd(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "verify-restored"))
        return cmd_verify_restored(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "schema")) {
        printf("kfd_bo_entry.handle: %s; criu_render_node BOs: %s; criu_dmabuf_node: %s\n",
               schema_has(field_of(&criu_kfd__descriptor, "bo_entries")->descriptor, "handle")
                   ? "yes"
                   : "no",
               schema_has(&criu_render_node__descriptor, "bo_entries") ? "yes" : "no",
               &criu_dmabuf_node__descriptor ? "yes" : "no");
        return 0;
    }
    die("usage: %s check|write-kfd|verify-restored|schema ...", argv[0]);
}
