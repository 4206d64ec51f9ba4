#pragma once
/// \file
/// A temporary directory removed with everything in it when the object goes away.

#include <map>
#include <string>

namespace testsupport {

/// Creates a fresh directory under $TMPDIR (or /tmp) and removes it recursively on destruction.
class TempDir {
public:
    TempDir();
    /// Under `base` instead.
    explicit TempDir(const std::string& base);
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::string& path() const { return path_; }
    /// path() + "/" + relative.
    std::string operator/(const std::string& relative) const { return path_ + "/" + relative; }

private:
    std::string path_;
};

/// Writes `text` to `path`, creating parent directories.
void writeFile(const std::string& path, const std::string& text);
/// Reads a whole file ("" when it cannot be read).
std::string readFile(const std::string& path);
/// Damages the byte at `offset` of `path` so that it surely differs (every bit flipped):
/// writing a constant there would leave it as it was one time in 256 when the file holds random
/// or encrypted bytes. False when the file has no such byte or could not be written.
bool flipByte(const std::string& path, long offset);
/// Every regular file of `dir`: name -> bytes.
std::map<std::string, std::string> readDirectoryFiles(const std::string& dir);

} // namespace testsupport
