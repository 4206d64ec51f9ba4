#pragma once
/// \file
/// The --json outputs of criu-amdgpu. Each is one JSON object on one line of stdout, with its keys
/// in the order they were set, so the text is as stable as its structure; each command documents
/// its structure where it builds it. Json is the tool's own small value type: only
/// json_output.cpp includes nlohmann-json (seconds of compiling in each file that includes it),
/// which writes the text.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace tools {

/// A JSON value: null, a bool, an integer, a string, an array or an object (keys in the order
/// they were first set).
class Json {
public:
    struct Member;

    Json() = default;
    Json(std::nullptr_t) {}
    template <typename T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
    Json(T value) : kind_(Kind::Bool), bool_(value) {}
    template <typename T,
              std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
    Json(T value) {
        if constexpr (std::is_signed_v<T>) {
            kind_ = Kind::Signed;
            signed_ = value;
        } else {
            kind_ = Kind::Unsigned;
            unsigned_ = value;
        }
    }
    Json(const char* text) : kind_(Kind::String), string_(text) {}
    Json(std::string text) : kind_(Kind::String), string_(std::move(text)) {}
    /// An array of the items.
    template <typename T> Json(const std::vector<T>& items) : kind_(Kind::Array) {
        for (const T& item : items)
            items_.emplace_back(item);
    }
    /// An object: {{"key", value}, ...}.
    Json(std::initializer_list<Member> members);

    static Json array() { return Json(Kind::Array); }
    static Json object() { return Json(Kind::Object); }

    /// The value of `key` of this object, added (null) where it has none; a null value becomes
    /// an empty object first.
    Json& operator[](const std::string& key);
    /// Appends `item` to this array; a null value becomes an empty array first.
    void push_back(Json item);

    /// The text: one line, every character outside printable ASCII as a \u escape, bytes that
    /// are not UTF-8 as U+FFFD.
    std::string dump() const;

private:
    enum class Kind { Null, Bool, Signed, Unsigned, String, Array, Object };
    explicit Json(Kind kind) : kind_(kind) {}
    friend struct JsonText;

    Kind kind_ = Kind::Null;
    bool bool_ = false;
    int64_t signed_ = 0;
    uint64_t unsigned_ = 0;
    std::string string_;
    std::vector<Json> items_;       ///< an array's items, an object's values
    std::vector<std::string> keys_; ///< an object's keys, one per item
};

struct Json::Member {
    std::string key;
    Json value;
};

/// `value` on one line of stdout (Json::dump). A string from a checkpoint (untrusted) never
/// reaches a terminal raw.
void printJson(const Json& value);

} // namespace tools
