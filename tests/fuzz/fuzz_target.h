#pragma once
/// \file
/// What each fuzz harness defines. fuzz_entry.cpp turns them into libFuzzer's entry points;
/// replay_main.cpp runs them over corpus files where libFuzzer is not available (gcc builds), so
/// every seed and every regression input runs in the normal test suite.

#include <string>
#include <string_view>
#include <vector>

/// Feeds one input to the parser under test. Must not crash, hang or leak on any input.
void fuzzOne(std::string_view input);

/// Seed inputs generated from the real formats (the project's writers, synthetic topologies,
/// the option table). Deterministic: tests compare them with the committed corpus.
std::vector<std::string> fuzzSeeds();
