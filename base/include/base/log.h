#pragma once
/// \file
/// Logging with criu's levels. Inside criu the frontend installs a sink that forwards to criu's
/// print_on_level; tools and tests log to stderr. Messages below the threshold are dropped.

#include <string>

namespace base {

/// criu's log levels (criu/include/log.h): 0 msg, 1 error, 2 warn, 3 info, 4 debug.
enum class LogLevel : int { Msg = 0, Error = 1, Warn = 2, Info = 3, Debug = 4 };

/// Receives one formatted line (no trailing newline) at a level.
using LogSink = void (*)(LogLevel level, const char* line);

/// Installs the sink for all logging; nullptr restores the stderr sink.
void setLogSink(LogSink sink);
/// Messages more verbose than `level` are dropped (default Warn for the stderr sink).
void setLogThreshold(LogLevel level);
/// The current threshold.
LogLevel logThreshold();
/// Parses "0".."4" or a name (msg, error, warn, info, debug); false when not a level.
bool parseLogLevel(const std::string& text, LogLevel* out);

/// Logs a printf-style line at a level, prefixed with "amdgpu: ".
void logAt(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

} // namespace base

#define HAL_LOG_ERROR(...) ::base::logAt(::base::LogLevel::Error, __VA_ARGS__)
#define HAL_LOG_WARN(...) ::base::logAt(::base::LogLevel::Warn, __VA_ARGS__)
#define HAL_LOG_INFO(...) ::base::logAt(::base::LogLevel::Info, __VA_ARGS__)
#define HAL_LOG_DEBUG(...) ::base::logAt(::base::LogLevel::Debug, __VA_ARGS__)
