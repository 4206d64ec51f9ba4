// kfd-driver-prime-client: a BO shared between two processes through a dma-buf, as Mesa shares
// one between a compositor and a client, on Debian's unmodified libdrm_amdgpu (run it preloaded
// with the driver's interposer). It forks before it touches the GPU; each process opens the
// render node NODE as a DRM file of its own. The exporter (the first process) allocates a GTT BO,
// maps it, writes the first half, exports it with amdgpu_bo_export(dma_buf_fd) twice (one
// dma-buf: the same inode), maps the dma-buf (the same bytes), finds a VM_ALWAYS_VALID BO's
// export refused (EPERM), and passes the dma-buf to the importer over a unix socket pair
// (SCM_RIGHTS), keeping its own fd. The importer imports it with amdgpu_bo_import, maps it in its
// GPU VM and by the CPU, finds the first half, writes the second, closes the fd (as Mesa does)
// and says so; the exporter finds the second half. Prints one line per fact, each process's
// prefixed with its role, and "ok" when both are done; exits 1 at the first failure, naming it.
//
// With --go-file FILE (tests/e2e/scenario_kfd_driver_render.sh, RENDER_VARIANT prime), both wait
// for FILE once the BO is shared, the exporter printing "waiting for FILE": criu dumps the tree
// there and restores it. Then each checks every byte; the exporter writes a new first quarter
// that the importer reads, the importer a new last quarter that the exporter reads (one memory
// still); the exporter exports the BO again (the dma-buf it held: the same inode) and passes it
// over, and the importer's import of it is the BO it holds (the same handle).
#include "coordination/fd_message.h"

#include <amdgpu.h>
#include <amdgpu_drm.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kBytes = 64 * 1024;
constexpr uint64_t kHalf = kBytes / 2;
constexpr uint64_t kQuarter = kBytes / 4;

const char* role = "exporter";

[[noreturn]] void die(const std::string& what, int r) {
    fprintf(stderr, "prime-client %s: %s: %d (%s)\n", role, what.c_str(), r,
            strerror(r < 0 ? -r : r));
    exit(1);
}

void check(int r, const std::string& what) {
    if (r != 0)
        die(what, r);
}

/// The byte at `offset` of the shared BO as writer `which` leaves it (0, 1 before the dump; 2, 3
/// after).
uint8_t sharedByte(int which, uint64_t offset) {
    return static_cast<uint8_t>((offset * 151 + static_cast<uint64_t>(which) * 89) ^ (offset >> 8));
}

void fill(uint8_t* bytes, int which, uint64_t from, uint64_t to) {
    for (uint64_t i = from; i < to; ++i)
        bytes[i] = sharedByte(which, i);
}

/// Dies naming `what` unless [from, to) holds writer `which`'s bytes.
void expect(const uint8_t* bytes, int which, uint64_t from, uint64_t to, const char* what) {
    for (uint64_t i = from; i < to; ++i)
        if (bytes[i] != sharedByte(which, i))
            die(std::string(what) + ": byte " + std::to_string(i) + " is not writer " +
                    std::to_string(which) + "'s",
                0);
}

/// Dies unless the BO holds both halves as they were written before the dump.
void expectEveryByte(const uint8_t* cpu) {
    expect(cpu, 0, 0, kHalf, "the exporter's half after restore");
    expect(cpu, 1, kHalf, kBytes, "the importer's half after restore");
    printf("%s bytes %llu of %llu\n", role, static_cast<unsigned long long>(kBytes),
           static_cast<unsigned long long>(kBytes));
}

void sendByte(int sock, char c, int fd = -1) {
    std::vector<int> fds;
    if (fd >= 0)
        fds.push_back(fd);
    auto sent = coordination::sendFdMessage(sock, &c, 1, fds, "a step of the other process");
    if (!sent.ok())
        die(std::string("sending '") + c + "': " + sent.error().describe(), 0);
}

/// Receives the byte `want` (and the fd that came with it into *fd, when asked).
void receiveByte(int sock, char want, int* fd = nullptr) {
    auto got = coordination::receiveFdMessage(sock, 1, "a step of the other process");
    if (!got.ok())
        die(std::string("waiting for '") + want + "': " + got.error().describe(), 0);
    const coordination::FdMessage& m = got.value();
    if (m.bytes.size() != 1 || m.bytes[0] != want || (fd != nullptr) != (m.fds.size() == 1))
        die(std::string("waiting for '") + want + "': another message", -EPROTO);
    if (fd)
        *fd = m.fds[0];
}

void waitForGoFile(const char* goFile, bool announce) {
    if (announce)
        printf("waiting for %s\n", goFile);
    while (access(goFile, F_OK) != 0)
        usleep(20 * 1000);
    printf("%s going on\n", role);
}

amdgpu_device_handle openDevice(const char* node) {
    int fd = open(node, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        die(std::string("open ") + node, -errno);
    uint32_t major = 0, minor = 0;
    amdgpu_device_handle dev = nullptr;
    check(amdgpu_device_initialize(fd, &major, &minor, &dev), "amdgpu_device_initialize");
    close(fd); // libdrm_amdgpu holds its own dup
    return dev;
}

uint8_t* cpuMap(amdgpu_bo_handle bo) {
    void* cpu = nullptr;
    check(amdgpu_bo_cpu_map(bo, &cpu), "amdgpu_bo_cpu_map");
    return static_cast<uint8_t*>(cpu);
}

ino_t inodeOf(int fd) {
    struct stat st {};
    if (fstat(fd, &st) != 0)
        die("fstat of a dma-buf", -errno);
    return st.st_ino;
}

int exportDmabuf(amdgpu_bo_handle bo) {
    uint32_t fd = 0;
    check(amdgpu_bo_export(bo, amdgpu_bo_handle_type_dma_buf_fd, &fd), "amdgpu_bo_export dma_buf");
    return static_cast<int>(fd);
}

/// The first process: makes, fills, exports and passes the BO.
int exporter(const char* node, int sock, const char* goFile, pid_t importer) {
    amdgpu_device_handle dev = openDevice(node);
    amdgpu_bo_alloc_request req = {};
    req.alloc_size = kBytes;
    req.phys_alignment = 4096;
    req.preferred_heap = AMDGPU_GEM_DOMAIN_GTT;
    amdgpu_bo_handle bo = nullptr;
    check(amdgpu_bo_alloc(dev, &req, &bo), "amdgpu_bo_alloc");
    uint8_t* cpu = cpuMap(bo);
    fill(cpu, 0, 0, kHalf);

    int dmabuf = exportDmabuf(bo);
    int again = exportDmabuf(bo);
    printf("exporter dma-buf %s\n", inodeOf(dmabuf) == inodeOf(again) ? "one per BO" : "two");
    off_t size = lseek(dmabuf, 0, SEEK_END);
    printf("exporter dma-buf size %lld\n", static_cast<long long>(size));
    lseek(dmabuf, 0, SEEK_SET);
    close(again);
    void* view = mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, dmabuf, 0);
    if (view == MAP_FAILED)
        die("mmap of the dma-buf", -errno);
    expect(static_cast<uint8_t*>(view), 0, 0, kHalf, "the dma-buf's mapping");
    munmap(view, kBytes);
    printf("exporter dma-buf maps the BO\n");

    // amdgpu_gem_prime_export: a per-VM BO is not exported.
    amdgpu_bo_alloc_request valid = req;
    valid.preferred_heap = AMDGPU_GEM_DOMAIN_VRAM;
    valid.flags = AMDGPU_GEM_CREATE_VM_ALWAYS_VALID | AMDGPU_GEM_CREATE_NO_CPU_ACCESS;
    amdgpu_bo_handle perVm = nullptr;
    check(amdgpu_bo_alloc(dev, &valid, &perVm), "amdgpu_bo_alloc VM_ALWAYS_VALID");
    uint32_t refused = 0;
    int r = amdgpu_bo_export(perVm, amdgpu_bo_handle_type_dma_buf_fd, &refused);
    printf("exporter always-valid export %s\n", r == 0 ? "done" : strerror(errno));
    check(amdgpu_bo_free(perVm), "amdgpu_bo_free VM_ALWAYS_VALID");

    sendByte(sock, 'D', dmabuf); // the dma-buf; this process keeps its fd
    receiveByte(sock, 'I');
    expect(cpu, 1, kHalf, kBytes, "the importer's half");
    printf("exporter sees the importer's bytes\n");
    fflush(stdout);

    if (goFile) {
        waitForGoFile(goFile, true);
        expectEveryByte(cpu);
        receiveByte(sock, 'K'); // the importer checked every byte too: now they may change
        fill(cpu, 2, 0, kQuarter);
        sendByte(sock, 'P');
        receiveByte(sock, 'C');
        expect(cpu, 3, kBytes - kQuarter, kBytes, "the importer's write after restore");
        printf("exporter sees the importer's write\n");
        int fresh = exportDmabuf(bo);
        printf("exporter dma-buf after restore %s\n",
               inodeOf(fresh) == inodeOf(dmabuf) ? "the one held" : "another");
        sendByte(sock, 'E', fresh);
        close(fresh);
        receiveByte(sock, 'R');
    }
    close(dmabuf);
    check(amdgpu_bo_cpu_unmap(bo), "amdgpu_bo_cpu_unmap");
    check(amdgpu_bo_free(bo), "amdgpu_bo_free");
    check(amdgpu_device_deinitialize(dev), "amdgpu_device_deinitialize");
    int status = 0;
    if (waitpid(importer, &status, 0) != importer || !WIFEXITED(status) || WEXITSTATUS(status))
        die("the importer failed", status);
    printf("ok\n");
    return 0;
}

/// The second process: imports the dma-buf it is passed, maps it, reads and writes it.
int importerMain(const char* node, int sock, const char* goFile) {
    role = "importer";
    amdgpu_device_handle dev = openDevice(node);
    int dmabuf = -1;
    receiveByte(sock, 'D', &dmabuf);
    amdgpu_bo_import_result imported = {};
    check(amdgpu_bo_import(dev, amdgpu_bo_handle_type_dma_buf_fd, static_cast<uint32_t>(dmabuf),
                           &imported),
          "amdgpu_bo_import dma_buf");
    close(dmabuf); // as Mesa: the import holds the BO
    uint32_t handle = 0;
    check(amdgpu_bo_export(imported.buf_handle, amdgpu_bo_handle_type_kms, &handle),
          "amdgpu_bo_export kms");
    printf("importer imported %llu bytes at handle %u\n",
           static_cast<unsigned long long>(imported.alloc_size), handle);
    uint64_t va = 0;
    amdgpu_va_handle range = nullptr;
    check(amdgpu_va_range_alloc(dev, amdgpu_gpu_va_range_general, kBytes, 4096, 0, &va, &range, 0),
          "amdgpu_va_range_alloc");
    check(amdgpu_bo_va_op(imported.buf_handle, 0, kBytes, va, 0, AMDGPU_VA_OP_MAP),
          "amdgpu_bo_va_op map");
    uint8_t* cpu = cpuMap(imported.buf_handle);
    expect(cpu, 0, 0, kHalf, "the exporter's half");
    printf("importer sees the exporter's bytes\n");
    fill(cpu, 1, kHalf, kBytes);
    fflush(stdout);
    sendByte(sock, 'I');

    if (goFile) {
        waitForGoFile(goFile, false);
        expectEveryByte(cpu);
        sendByte(sock, 'K');
        receiveByte(sock, 'P');
        expect(cpu, 2, 0, kQuarter, "the exporter's write after restore");
        printf("importer sees the exporter's write\n");
        fill(cpu, 3, kBytes - kQuarter, kBytes);
        sendByte(sock, 'C');
        int fresh = -1;
        receiveByte(sock, 'E', &fresh);
        amdgpu_bo_import_result again = {};
        check(amdgpu_bo_import(dev, amdgpu_bo_handle_type_dma_buf_fd, static_cast<uint32_t>(fresh),
                               &again),
              "amdgpu_bo_import dma_buf after restore");
        close(fresh);
        uint32_t againHandle = 0;
        check(amdgpu_bo_export(again.buf_handle, amdgpu_bo_handle_type_kms, &againHandle),
              "amdgpu_bo_export kms after restore");
        printf("importer import after restore handle %u %s\n", againHandle,
               again.buf_handle == imported.buf_handle ? "the BO held" : "another BO");
        check(amdgpu_bo_free(again.buf_handle), "amdgpu_bo_free of the second import");
        sendByte(sock, 'R');
    }
    check(amdgpu_bo_cpu_unmap(imported.buf_handle), "amdgpu_bo_cpu_unmap");
    check(amdgpu_bo_va_op(imported.buf_handle, 0, kBytes, va, 0, AMDGPU_VA_OP_UNMAP),
          "amdgpu_bo_va_op unmap");
    check(amdgpu_va_range_free(range), "amdgpu_va_range_free");
    check(amdgpu_bo_free(imported.buf_handle), "amdgpu_bo_free");
    check(amdgpu_device_deinitialize(dev), "amdgpu_device_deinitialize");
    printf("importer ok\n");
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0); // two processes print into one file
    const char* node = argc > 1 ? argv[1] : "/dev/dri/renderD128";
    const char* goFile = argc > 3 && !strcmp(argv[2], "--go-file") ? argv[3] : nullptr;
    if (argc != 1 && argc != 2 && !goFile)
        die(std::string("usage: ") + argv[0] + " [NODE [--go-file FILE]]", -EINVAL);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0)
        die("socketpair", -errno);
    pid_t child = fork();
    if (child < 0)
        die("fork", -errno);
    if (child == 0) {
        close(pair[0]);
        return importerMain(node, pair[1], goFile);
    }
    close(pair[1]);
    return exporter(node, pair[0], goFile, child);
}
