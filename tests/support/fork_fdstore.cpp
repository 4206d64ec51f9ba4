#include "fork_fdstore.h"

#include <cerrno>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace testsupport {

ForkSharedFdStore::ForkSharedFdStore() {
    void* mem =
        mmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    table_ = mem == MAP_FAILED ? nullptr : static_cast<Table*>(mem);
}

ForkSharedFdStore::~ForkSharedFdStore() {
    if (table_)
        munmap(table_, sizeof(Table));
}

coordination::FdStore ForkSharedFdStore::store() {
    Table* t = table_;
    return coordination::FdStore{[t](int fd) {
                                     int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
                                     if (copy < 0)
                                         return -errno;
                                     int id = t->next.fetch_add(1);
                                     if (id >= kEntries) {
                                         close(copy);
                                         return -ENOSPC;
                                     }
                                     t->entries[id] = Entry{getpid(), copy};
                                     t->ready[id].store(1);
                                     return id;
                                 },
                                 [t](int id) {
                                     if (id < 0 || id >= kEntries || !t->ready[id].load())
                                         return -ENOENT;
                                     const Entry& e = t->entries[id];
                                     if (e.pid == getpid())
                                         return fcntl(e.fd, F_DUPFD_CLOEXEC, 0);
                                     int pidfd =
                                         static_cast<int>(syscall(SYS_pidfd_open, e.pid, 0));
                                     if (pidfd < 0)
                                         return -errno;
                                     int fd =
                                         static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, e.fd, 0));
                                     int err = errno;
                                     close(pidfd);
                                     return fd < 0 ? -err : fd;
                                 }};
}

} // namespace testsupport
