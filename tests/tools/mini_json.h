#pragma once
/// \file
/// A minimal JSON reader for checking the tool's --json output: it parses one complete JSON
/// text (RFC 8259, \u escapes kept as written) into a tree, or says where it is malformed.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tooltest {

struct Json {
    enum class Kind { Null, Bool, Number, String, Array, Object };
    Kind kind = Kind::Null;
    bool boolean = false;
    double number = 0;
    std::string string;
    std::vector<Json> array;
    std::map<std::string, Json> object;

    bool isObject() const { return kind == Kind::Object; }
    bool isArray() const { return kind == Kind::Array; }
    bool isString() const { return kind == Kind::String; }
    bool isBool() const { return kind == Kind::Bool; }
    bool isNull() const { return kind == Kind::Null; }
    bool has(const std::string& key) const { return isObject() && object.count(key); }
    /// The member `key` of an object (a null value when absent).
    const Json& operator[](const std::string& key) const;
};

/// Parses `text` as exactly one JSON value, surrounded by optional whitespace. On failure returns
/// nullopt and, when `error` is given, sets it to what is wrong and where.
std::optional<Json> parseJson(const std::string& text, std::string* error = nullptr);

} // namespace tooltest
