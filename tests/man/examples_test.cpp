// Every configuration example of criu-amdgpu-options(5), in every form the page shows, loads
// through the plugin's configuration loader and sets what the page says; the example YAML file
// loads, and uncommented it sets every option to its default.
#include "examples.h"
#include "man_render.h"
#include "pages.h"

#include "config/config.h"
#include "config/option_table.h"
#include "config/value_parsers.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using config::Sources;

// Sources that read only what the test gives: no environment, no default files.
Sources isolated(const testsupport::TempDir& tmp) {
    Sources s;
    s.env = std::map<std::string, std::string>{};
    s.defaultYamlPath = tmp / "absent.yaml";
    s.defaultOptionsPath = tmp / "absent.conf";
    return s;
}

// The value `option` has after loading `sources`, or the load error.
std::string valueAfter(const Sources& sources, const std::string& option) {
    auto loaded = config::loadConfig(sources);
    if (!loaded)
        return "error: " + loaded.error().describe();
    const config::EffectiveOption* entry = loaded->find(option);
    return entry ? entry->value : "no option " + option;
}

TEST(ConfigExamples, EveryFormSetsWhatThePageSays) {
    ASSERT_GE(man::configExamples().size(), 3u);
    for (const man::ConfigExample& e : man::configExamples()) {
        SCOPED_TRACE(e.title);
        testsupport::TempDir tmp;
        Sources env = isolated(tmp);
        env.env = e.env;
        EXPECT_EQ(valueAfter(env, e.option), e.value) << "environment";

        Sources yaml = isolated(tmp);
        yaml.defaultYamlPath = tmp / "amdgpu.yaml";
        testsupport::writeFile(yaml.defaultYamlPath, e.yaml);
        EXPECT_EQ(valueAfter(yaml, e.option), e.value) << "YAML:\n" << e.yaml;

        Sources options = isolated(tmp);
        options.defaultOptionsPath = tmp / "amdgpu.conf";
        testsupport::writeFile(options.defaultOptionsPath, e.optionsFile);
        EXPECT_EQ(valueAfter(options, e.option), e.value) << "options file:\n" << e.optionsFile;

        Sources plugin = isolated(tmp);
        plugin.pluginOptions = {e.pluginOption};
        EXPECT_EQ(valueAfter(plugin, e.option), e.value) << "plugin option " << e.pluginOption;

        EXPECT_NE(valueAfter(isolated(tmp), e.option), e.value) << "the default already is it";
    }
}

TEST(ConfigExamples, ThePageShowsEveryForm) {
    mantest::Rendering r = mantest::render(mantest::builtPage("criu-amdgpu-options.5"));
    ASSERT_TRUE(r.ok) << r.warnings;
    for (const man::ConfigExample& e : man::configExamples()) {
        EXPECT_THAT(r.text, testing::HasSubstr(e.title));
        EXPECT_THAT(r.text, testing::HasSubstr(mantest::asRendered(e.yaml)));
        EXPECT_THAT(r.text, testing::HasSubstr(mantest::asRendered(e.optionsFile)));
        EXPECT_THAT(r.text, testing::HasSubstr("--plugin-option " + e.pluginOption));
        for (const auto& [name, value] : e.env)
            EXPECT_THAT(r.text, testing::HasSubstr(name + "=" + value + " criu restore"));
    }
}

// The example file with every "#key: value" line uncommented.
std::string uncommented(const std::string& text) {
    std::string out;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        std::string line = text.substr(start, end - start);
        if (line.size() > 1 && line[0] == '#' && line[1] != ' ' &&
            line.find(": ") != std::string::npos)
            line.erase(0, 1);
        out += line + "\n";
        start = end == std::string::npos ? text.size() : end + 1;
    }
    return out;
}

TEST(ExampleYaml, TheBuiltFileIsTheGeneratedOneAndLoads) {
    std::string built = testsupport::readFile(mantest::builtPage("amdgpu.yaml"));
    EXPECT_EQ(built, man::exampleYaml());
    testsupport::TempDir tmp;
    Sources s = isolated(tmp);
    s.defaultYamlPath = tmp / "amdgpu.yaml";
    testsupport::writeFile(s.defaultYamlPath, built);
    auto loaded = config::loadConfig(s);
    ASSERT_TRUE(loaded) << loaded.error().describe();
    EXPECT_TRUE(loaded->yamlPresent);
}

TEST(ExampleYaml, UncommentedItSetsEveryYamlOptionToItsDefaultWhereItHasOne) {
    testsupport::TempDir tmp;
    Sources s = isolated(tmp);
    s.defaultYamlPath = tmp / "amdgpu.yaml";
    std::string text = uncommented(man::exampleYaml());
    testsupport::writeFile(s.defaultYamlPath, text);
    auto loaded = config::loadConfig(s);
    ASSERT_TRUE(loaded) << loaded.error().describe() << "\n" << text;
    auto defaults = config::loadConfig(isolated(tmp));
    ASSERT_TRUE(defaults);
    for (const config::OptionSpec& spec : config::optionTable()) {
        if (!spec.allows(config::SourceKind::Yaml))
            continue;
        const config::EffectiveOption* entry = loaded->find(spec.name);
        ASSERT_NE(entry, nullptr) << spec.name;
        if (man::exampleShowsDefault(spec)) {
            EXPECT_EQ(entry->value, defaults->find(spec.name)->value) << spec.name;
        }
        EXPECT_THAT(entry->origin, testing::HasSubstr("amdgpu.yaml")) << spec.name << " not set";
    }
}

} // namespace
