// tools::Json (tools/json_output.h), the value every --json output is built as: its text is what
// nlohmann-json writes for the same value, keys in the order first set, and a string that is not
// printable ASCII (a name from an untrusted checkpoint) never reaches the text raw.
#include "json_output.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

TEST(ToolJson, KeysKeepTheOrderTheyWereFirstSetAndASecondSetReplacesTheValueInPlace) {
    tools::Json j;
    j["b"] = 1;
    j["a"] = "x";
    j["b"] = 2;
    j["o"]["x"] = 1;
    j["o"]["y"] = 2;
    EXPECT_EQ(j.dump(), R"({"b":2,"a":"x","o":{"x":1,"y":2}})");
}

TEST(ToolJson, ScalarsArraysAndObjectsAreWrittenAsJson) {
    tools::Json j;
    j["null"] = nullptr;
    j["yes"] = true;
    j["negative"] = int64_t{-5};
    j["largest"] = std::numeric_limits<uint64_t>::max();
    j["list"] = std::vector<std::string>{"p", "q"};
    j["empty_array"] = tools::Json::array();
    j["empty_object"] = tools::Json::object();
    j["nested"] = {{"k", 1u}, {"v", tools::Json()}};
    j["appended"].push_back(3);
    j["set"]["inner"] = false;
    EXPECT_EQ(j.dump(),
              R"({"null":null,"yes":true,"negative":-5,"largest":18446744073709551615,)"
              R"("list":["p","q"],"empty_array":[],"empty_object":{},"nested":{"k":1,"v":null},)"
              R"("appended":[3],"set":{"inner":false}})");
}

TEST(ToolJson, EveryCharacterOutsidePrintableAsciiIsEscapedAndBadUtf8BecomesFffd) {
    tools::Json j;
    j["s"] = std::string("a\x01\x1b[31m\"\\\xc3\xa9\xff");
    EXPECT_EQ(j.dump(), R"({"s":"a\u0001\u001b[31m\"\\\u00e9\ufffd"})");
}

} // namespace
