#include "formats/secret_bytes.h"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <type_traits>

namespace formats {

using base::ErrorCode;
using base::makeError;
using base::Result;

namespace {

/// How many dropped mappings are kept for the next keys (a restore asks for a few per chain).
constexpr size_t kKeptMappings = 8;

struct Dropped {
    std::byte* data;
    size_t mapped;
};

std::mutex& poolMutex() {
    static std::mutex mu;
    return mu;
}

/// Mappings dropped and zeroed, still advised out of core dumps, oldest first. A fixed array of
/// static storage: it needs no destructor (so it outlives every static SecretBytes) and no heap
/// (a heap block held only by a static pointer is reported as leaked once the library holding the
/// pointer is unloaded, as a backend is).
class DroppedPool {
public:
    bool full() const { return count_ == kKeptMappings; }
    /// Takes a kept mapping of `mapped` bytes, or {nullptr, 0}.
    Dropped take(size_t mapped) {
        for (size_t i = 0; i < count_; ++i)
            if (kept_[i].mapped == mapped)
                return removeAt(i);
        return {nullptr, 0};
    }
    Dropped takeOldest() { return removeAt(0); }
    void push(Dropped d) { kept_[count_++] = d; }

private:
    Dropped removeAt(size_t i) {
        Dropped d = kept_[i];
        for (size_t j = i + 1; j < count_; ++j)
            kept_[j - 1] = kept_[j];
        --count_;
        return d;
    }
    std::array<Dropped, kKeptMappings> kept_{};
    size_t count_ = 0;
};
static_assert(std::is_trivially_destructible_v<DroppedPool>);

DroppedPool& pool() {
    static DroppedPool kept;
    return kept;
}

size_t pageRounded(size_t size) {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    return (size + page - 1) / page * page;
}

} // namespace

Result<SecretBytes> SecretBytes::allocate(size_t size) {
    SecretBytes s;
    if (size == 0)
        return s;
    size_t mapped = pageRounded(size);
    {
        std::lock_guard lock(poolMutex());
        s.data_ = pool().take(mapped).data;
    }
    if (!s.data_) {
        void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return makeError(ErrorCode::Io, "%zu bytes for key material: %s", mapped,
                             strerror(errno));
        if (madvise(p, mapped, MADV_DONTDUMP) != 0) {
            int err = errno;
            munmap(p, mapped);
            return makeError(ErrorCode::Io,
                             "keeping key material out of core dumps (MADV_DONTDUMP): %s",
                             strerror(err));
        }
        s.data_ = static_cast<std::byte*>(p);
    }
    s.size_ = size;
    s.mapped_ = mapped;
    return s;
}

void SecretBytes::drop() {
    if (!data_)
        return;
    explicit_bzero(data_, mapped_);
    Dropped evicted{nullptr, 0};
    {
        // The newest dropped mapping is always kept: the oldest makes room for it.
        std::lock_guard lock(poolMutex());
        auto& kept = pool();
        if (kept.full())
            evicted = kept.takeOldest();
        kept.push({data_, mapped_});
    }
    if (evicted.data)
        munmap(evicted.data, evicted.mapped);
    data_ = nullptr;
    size_ = mapped_ = 0;
}

void wipeSecret(std::span<std::byte> bytes) {
    if (!bytes.empty())
        explicit_bzero(bytes.data(), bytes.size());
}

} // namespace formats
