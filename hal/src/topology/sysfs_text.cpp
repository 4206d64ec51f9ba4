#include "sysfs_text.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <set>
#include <unistd.h>

namespace hal::sysfs {

int readFile(const std::string& path, std::string* out) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    out->clear();
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int err = errno;
            ::close(fd);
            return err;
        }
        if (n == 0)
            break;
        out->append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return 0;
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

bool parseUnsigned(const std::string& text, uint64_t* out) {
    if (text.empty() || text.size() > 20)
        return false;
    for (char c : text)
        if (c < '0' || c > '9')
            return false;
    errno = 0;
    char* end = nullptr;
    unsigned long long v = strtoull(text.c_str(), &end, 10);
    if (errno == ERANGE || *end != '\0')
        return false;
    *out = v;
    return true;
}

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos)
        return "";
    size_t e = s.find_last_not_of(" \t\r");
    return s.substr(b, e - b + 1);
}

} // namespace

void parseKeyValues(const std::string& text, std::map<std::string, uint64_t>* numbers,
                    std::map<std::string, std::string>* texts) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        if (nl == std::string::npos)
            nl = text.size();
        std::string line = trim(text.substr(pos, nl - pos));
        pos = nl + 1;
        if (line.empty())
            continue;
        size_t sp = line.find_first_of(" \t");
        std::string key = sp == std::string::npos ? line : line.substr(0, sp);
        std::string value = sp == std::string::npos ? "" : trim(line.substr(sp));
        uint64_t v = 0;
        if (parseUnsigned(value, &v))
            (*numbers)[key] = v;
        else
            (*texts)[key] = value;
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
    static const std::vector<std::string> keys = {
        "cpu_cores_count", "simd_count", "mem_banks_count", "caches_count", "io_links_count",
        "p2p_links_count", "cpu_core_id_base", "simd_id_base", "max_waves_per_simd",
        "lds_size_in_kb", "gds_size_in_kb", "num_gws", "wave_front_size", "array_count",
        "simd_arrays_per_engine", "cu_per_simd_array", "simd_per_cu", "max_slots_scratch_cu",
        "gfx_target_version", "vendor_id", "device_id", "location_id", "domain",
        "drm_render_minor", "hive_id", "num_sdma_engines", "num_sdma_xgmi_engines",
        "num_sdma_queues_per_engine", "num_cp_queues", "max_engine_clk_fcompute",
        "local_mem_size", "fw_version", "capability", "capability2", "debug_prop",
        "sdma_fw_version", "unique_id", "num_xcc", "max_engine_clk_ccompute"};
    return keys;
}

const std::vector<std::string>& linkKeyOrder() {
    static const std::vector<std::string> keys = {
        "type", "version_major", "version_minor", "node_from", "node_to", "weight",
        "min_latency", "max_latency", "min_bandwidth", "max_bandwidth",
        "recommended_transfer_size", "recommended_sdma_engine_id_mask", "flags"};
    return keys;
}

const std::vector<std::string>& memBankKeyOrder() {
    static const std::vector<std::string> keys = {"heap_type", "size_in_bytes", "flags", "width",
                                                  "mem_clk_max"};
    return keys;
}

const std::vector<std::string>& cacheKeyOrder() {
    static const std::vector<std::string> keys = {
        "processor_id_low", "level", "size", "cache_line_size", "cache_lines_per_tag",
        "association", "latency", "type", "sibling_map"};
    return keys;
}

std::vector<unsigned> numberedEntries(const std::string& dir, int* err) {
    std::vector<unsigned> out;
    *err = 0;
    DIR* d = ::opendir(dir.c_str());
    if (!d) {
        *err = errno;
        return out;
    }
    while (struct dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name.empty() || name.size() > 9 ||
            !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        out.push_back(static_cast<unsigned>(std::stoul(name)));
    }
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

} // namespace hal::sysfs
