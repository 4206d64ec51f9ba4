#include "config/config.h"
#include "config/option_table.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace config {
namespace {

TEST(OptionsDoc, CommittedDocIsTheGeneratedText) {
    std::string committed = testsupport::readFile(CONFIG_OPTIONS_DOC);
    EXPECT_TRUE(committed == optionsMarkdown())
        << "docs/options.md differs from the text generated from the option table; regenerate "
           "it with `cmake --build <build> --target criu_amdgpu_options_doc` (or "
           "`criu-amdgpu config help > docs/options.md`)";
}

TEST(OptionsDoc, DocumentsEveryOptionWithItsNames) {
    std::string doc = optionsMarkdown();
    for (const OptionSpec& spec : optionTable()) {
        EXPECT_THAT(doc, testing::HasSubstr("### " + std::string(spec.name) + "\n"));
        EXPECT_THAT(doc, testing::HasSubstr(std::string(spec.envName)));
        if (!spec.legacyEnv.empty()) {
            EXPECT_THAT(doc, testing::HasSubstr(std::string(spec.legacyEnv)));
        }
        EXPECT_THAT(doc, testing::HasSubstr(std::string(spec.help)));
    }
}

} // namespace
} // namespace config
