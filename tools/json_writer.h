#pragma once
/// \file
/// A minimal streaming JSON writer for the tool's --json outputs: objects, arrays, strings
/// (escaped per RFC 8259), unsigned/signed integers in decimal, booleans.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tools {

/// Builds one JSON text. Commas are inserted automatically; keys are set with key() before a
/// value inside an object. Misuse (a value without a key in an object) is not detected.
class JsonWriter {
public:
    /// Starts an object ("{").
    JsonWriter& beginObject();
    /// Ends the current object ("}").
    JsonWriter& endObject();
    /// Starts an array ("[").
    JsonWriter& beginArray();
    /// Ends the current array ("]").
    JsonWriter& endArray();
    /// Sets the key of the next value in the current object.
    JsonWriter& key(std::string_view name);
    /// A string value, escaped.
    JsonWriter& value(std::string_view text);
    /// A string value from a C string (so literals are not taken for booleans).
    JsonWriter& value(const char* text) { return value(std::string_view(text)); }
    /// An unsigned integer in decimal.
    JsonWriter& value(uint64_t number);
    /// A signed integer in decimal.
    JsonWriter& value(int64_t number);
    /// An int in decimal.
    JsonWriter& value(int number) { return value(static_cast<int64_t>(number)); }
    /// An unsigned int in decimal.
    JsonWriter& value(unsigned number) { return value(static_cast<uint64_t>(number)); }
    /// true or false.
    JsonWriter& value(bool flag);
    /// The text written so far.
    const std::string& str() const { return out_; }

    /// `text` as a quoted, escaped JSON string.
    static std::string quote(std::string_view text);

private:
    void separate();
    std::string out_;
    std::vector<bool> first_; ///< per open container: no element written yet
    bool afterKey_ = false;
};

} // namespace tools
