#include "base/log.h"

#include "base/result.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <strings.h>

namespace base {
namespace {

void stderrSink(LogLevel level, const char* line) {
    static const char* const kTags[] = {"", "Error: ", "Warn: ", "Info: ", "Debug: "};
    int index = static_cast<int>(level);
    fprintf(stderr, "%s%s\n", (index >= 0 && index <= 4) ? kTags[index] : "", line);
}

std::atomic<LogSink> gSink{&stderrSink};
std::atomic<int> gThreshold{static_cast<int>(LogLevel::Warn)};

} // namespace

void setLogSink(LogSink sink) {
    gSink.store(sink ? sink : &stderrSink);
}

void setLogThreshold(LogLevel level) {
    gThreshold.store(static_cast<int>(level));
}

LogLevel logThreshold() {
    return static_cast<LogLevel>(gThreshold.load());
}

bool parseLogLevel(const std::string& text, LogLevel* out) {
    static const char* const kNames[] = {"msg", "error", "warn", "info", "debug"};
    for (int i = 0; i <= 4; ++i) {
        if (text == std::to_string(i) || strcasecmp(text.c_str(), kNames[i]) == 0) {
            *out = static_cast<LogLevel>(i);
            return true;
        }
    }
    return false;
}

void logAt(LogLevel level, const char* fmt, ...) {
    if (static_cast<int>(level) > gThreshold.load())
        return;
    va_list args;
    va_start(args, fmt);
    std::string line = "amdgpu: " + strFormatV(fmt, args);
    va_end(args);
    gSink.load()(level, line.c_str());
}

} // namespace base
