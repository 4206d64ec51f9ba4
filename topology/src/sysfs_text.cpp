#include "sysfs_text.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fcntl.h>
#include <set>
#include <unistd.h>

namespace topology::sysfs {

namespace {

// Reads an open file to its end into `out`. One read() is enough for sysfs attributes and for
// regular files: a read that does not fill the buffer has reached the end (sysfs hands over a
// whole attribute at once), so a second read() only to see 0 is skipped.
int readOpen(int fd, std::string* out) {
    char buf[4096];
    out->clear();
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            ::close(fd);
            out->clear();
            return err;
        }
        out->append(buf, static_cast<size_t>(n));
        if (n == 0 || static_cast<size_t>(n) < sizeof buf)
            break;
    }
    ::close(fd);
    return 0;
}

} // namespace

int readFile(const std::string& path, std::string* out) {
    return readFileAt(AT_FDCWD, path.c_str(), out);
}

int readFileAt(int dirFd, const char* name, std::string* out) {
    int fd = ::openat(dirFd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        out->clear();
        return errno;
    }
    return readOpen(fd, out);
}

int writeFile(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno;
    size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            ::close(fd);
            return err;
        }
        done += static_cast<size_t>(n);
    }
    return ::close(fd) == 0 ? 0 : errno;
}

namespace {

bool blank(char c) {
    return c == ' ' || c == '\t' || c == '\r';
}

// Without leading and trailing blanks (spaces, tabs, carriage returns).
std::string_view trim(std::string_view s) {
    size_t b = 0, e = s.size();
    while (b < e && blank(s[b]))
        ++b;
    while (e > b && blank(s[e - 1]))
        --e;
    return s.substr(b, e - b);
}

// An unsigned decimal number of at most 20 digits that fits in 64 bits.
std::optional<uint64_t> decimal(std::string_view text) {
    uint64_t v = 0;
    if (text.empty() || text.size() > 20 || text[0] < '0' || text[0] > '9')
        return std::nullopt;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return v;
}

} // namespace

std::optional<uint64_t> parseNumber(std::string_view text) {
    return decimal(trim(text.substr(0, text.find('\n'))));
}

void parseKeyValues(std::string_view text, std::map<std::string, uint64_t>* numbers,
                    std::map<std::string, std::string>* texts) {
    while (!text.empty()) {
        size_t nl = text.find('\n');
        std::string_view line = trim(text.substr(0, nl));
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        if (line.empty())
            continue;
        size_t sp = 0;
        while (sp < line.size() && line[sp] != ' ' && line[sp] != '\t')
            ++sp;
        std::string_view key = line.substr(0, sp);
        std::string_view value = trim(line.substr(sp));
        if (std::optional<uint64_t> v = decimal(value))
            (*numbers)[std::string(key)] = *v;
        else
            (*texts)[std::string(key)] = std::string(value);
    }
}

std::string formatKeyValues(const std::map<std::string, uint64_t>& numbers,
                            const std::map<std::string, std::string>& texts,
                            const std::vector<std::string>& order) {
    std::string out;
    std::set<std::string> done;
    auto emit = [&](const std::string& key) {
        if (!done.insert(key).second)
            return;
        auto n = numbers.find(key);
        if (n != numbers.end()) {
            out += key + " " + std::to_string(n->second) + "\n";
            return;
        }
        auto t = texts.find(key);
        if (t != texts.end())
            out += t->second.empty() ? key + "\n" : key + " " + t->second + "\n";
    };
    for (const std::string& key : order)
        emit(key);
    for (const auto& [key, value] : numbers)
        emit(key);
    for (const auto& [key, value] : texts)
        emit(key);
    return out;
}

const std::vector<std::string>& nodeKeyOrder() {
    static const std::vector<std::string> keys = {"cpu_cores_count",
                                                  "simd_count",
                                                  "mem_banks_count",
                                                  "caches_count",
                                                  "io_links_count",
                                                  "p2p_links_count",
                                                  "cpu_core_id_base",
                                                  "simd_id_base",
                                                  "max_waves_per_simd",
                                                  "lds_size_in_kb",
                                                  "gds_size_in_kb",
                                                  "num_gws",
                                                  "wave_front_size",
                                                  "array_count",
                                                  "simd_arrays_per_engine",
                                                  "cu_per_simd_array",
                                                  "simd_per_cu",
                                                  "max_slots_scratch_cu",
                                                  "gfx_target_version",
                                                  "vendor_id",
                                                  "device_id",
                                                  "location_id",
                                                  "domain",
                                                  "drm_render_minor",
                                                  "hive_id",
                                                  "num_sdma_engines",
                                                  "num_sdma_xgmi_engines",
                                                  "num_sdma_queues_per_engine",
                                                  "num_cp_queues",
                                                  "max_engine_clk_fcompute",
                                                  "local_mem_size",
                                                  "fw_version",
                                                  "capability",
                                                  "capability2",
                                                  "debug_prop",
                                                  "sdma_fw_version",
                                                  "unique_id",
                                                  "num_xcc",
                                                  "max_engine_clk_ccompute"};
    return keys;
}

const std::vector<std::string>& linkKeyOrder() {
    static const std::vector<std::string> keys = {"type",
                                                  "version_major",
                                                  "version_minor",
                                                  "node_from",
                                                  "node_to",
                                                  "weight",
                                                  "min_latency",
                                                  "max_latency",
                                                  "min_bandwidth",
                                                  "max_bandwidth",
                                                  "recommended_transfer_size",
                                                  "recommended_sdma_engine_id_mask",
                                                  "flags"};
    return keys;
}

const std::vector<std::string>& memBankKeyOrder() {
    static const std::vector<std::string> keys = {"heap_type", "size_in_bytes", "flags", "width",
                                                  "mem_clk_max"};
    return keys;
}

const std::vector<std::string>& cacheKeyOrder() {
    static const std::vector<std::string> keys = {
        "processor_id_low", "level",   "size", "cache_line_size", "cache_lines_per_tag",
        "association",      "latency", "type", "sibling_map"};
    return keys;
}

} // namespace topology::sysfs
