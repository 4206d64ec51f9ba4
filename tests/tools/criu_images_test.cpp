// The reader of criu's own images (tools/criu_images): the framing and the two records it
// decodes, on images written as criu writes them, cut or with the wrong magic.
#include "criu_images/criu_facts.h"
#include "criu_images/criu_image_write.h"
#include "criu_images/image_framing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

namespace {

using namespace criu_images;
using testing::HasSubstr;

uint32_t wordAt(const std::string& bytes, size_t at) {
    uint32_t w = 0;
    std::memcpy(&w, bytes.data() + at, sizeof(w));
    return w;
}

TEST(CriuImageFraming, InventoryHasOneMagicWordOtherImagesTwo) {
    std::string inv = inventoryImage(std::vector<std::string>{"amdgpu_plugin"});
    EXPECT_EQ(wordAt(inv, 0), kInventoryMagic);
    EXPECT_EQ(wordAt(inv, 4), inv.size() - 8); // the entry's size word, then the entry
    std::string files = filesImage({{kFdTypeExt, 3}});
    EXPECT_EQ(wordAt(files, 0), kCommonMagic);
    EXPECT_EQ(wordAt(files, 4), kFilesMagic);
    auto parsed = parseFramedImage("files.img", files);
    ASSERT_TRUE(parsed.ok()) << parsed.error().describe();
    EXPECT_EQ(parsed->headMagic, kCommonMagic);
    ASSERT_EQ(parsed->entries.size(), 1u);
    EXPECT_EQ(parsed->entries[0].offset, 8u);
}

TEST(CriuImageFraming, ACutEntryNamesTheFileTheEntryAndItsOffset) {
    std::string files = filesImage({{1, 1}, {kFdTypeExt, 300}});
    auto parsed = parseFramedImage("files.img", files.substr(0, files.size() - 1));
    ASSERT_FALSE(parsed.ok());
    uint32_t first = wordAt(files, 8);
    EXPECT_THAT(
        parsed.error().describe(),
        HasSubstr("files.img: at offset " + std::to_string(12 + first) + ": entry 2 announces"));
    EXPECT_THAT(parsed.error().describe(), HasSubstr("the file is cut"));
    parsed = parseFramedImage("files.img", files.substr(0, 10)); // half a size word
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.error().describe(), HasSubstr("too few for an entry's size word"));
}

TEST(CriuImageFraming, AFileThatIsNotCriusIsRefusedByItsFirstWord) {
    auto parsed = parseFramedImage("pages-1.img", std::string(16, '\x7f'));
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.error().describe(), HasSubstr("pages-1.img: the first word 0x7f7f7f7f is no "
                                                     "criu image magic"));
    EXPECT_FALSE(parseFramedImage("x", "ab").ok());
}

TEST(CriuInventory, ThePluginListIsAbsentEmptyOrNamed) {
    auto decode = [](const std::optional<std::vector<std::string>>& plugins) {
        std::string bytes = inventoryImage(plugins);
        auto framed = parseFramedImage("inventory.img", bytes);
        EXPECT_TRUE(framed.ok());
        auto inv = decodeInventory("inventory.img", *framed);
        EXPECT_TRUE(inv.ok()) << inv.error().describe();
        return *inv;
    };
    Inventory none = decode(std::nullopt);
    EXPECT_EQ(none.imgVersion, 2u);
    EXPECT_FALSE(none.plugins);
    Inventory empty = decode(std::vector<std::string>{});
    ASSERT_TRUE(empty.plugins);
    EXPECT_TRUE(empty.plugins->empty());
    EXPECT_FALSE(empty.lists("amdgpu_plugin"));
    Inventory two = decode(std::vector<std::string>{"cuda_plugin", "amdgpu_plugin"});
    EXPECT_TRUE(two.lists("amdgpu_plugin"));
    EXPECT_FALSE(two.lists("amdgpu"));
}

TEST(CriuInventory, AnotherImageOrAGarbledEntryIsRefusedByName) {
    std::string files = filesImage({});
    auto framed = parseFramedImage("files.img", files);
    ASSERT_TRUE(framed.ok());
    EXPECT_THAT(decodeInventory("files.img", *framed).error().describe(),
                HasSubstr("is not the inventory's"));
    std::string garbled = frameImage(0, kInventoryMagic, {"\xff\xff"});
    framed = parseFramedImage("inventory.img", garbled);
    ASSERT_TRUE(framed.ok());
    EXPECT_THAT(decodeInventory("inventory.img", *framed).error().describe(),
                HasSubstr("inventory.img: entry 1 (at offset 4) does not hold a valid"));
}

TEST(CriuExternalFiles, OnlyEntriesOfTypeExtCount) {
    std::string bytes = filesImage({{1, 1}, {kFdTypeExt, 7}, {2, 8}, {kFdTypeExt, 40000}});
    auto framed = parseFramedImage("files.img", bytes);
    ASSERT_TRUE(framed.ok());
    auto ids = decodeExternalFiles("files.img", *framed);
    ASSERT_TRUE(ids.ok()) << ids.error().describe();
    EXPECT_EQ(*ids, (std::set<uint32_t>{7, 40000}));
    bytes = extFilesImage({4, 5});
    framed = parseFramedImage("ext-files.img", bytes);
    ASSERT_TRUE(framed.ok());
    EXPECT_EQ(*decodeExternalFiles("ext-files.img", *framed), (std::set<uint32_t>{4, 5}));
}

TEST(CriuExternalFiles, AFileEntryWithoutItsTypeIsNamed) {
    // field 2 (id) = 3 only: criu requires the type.
    std::string bytes = frameImage(kCommonMagic, kFilesMagic, {std::string("\x10\x03", 2)});
    auto framed = parseFramedImage("files.img", bytes);
    ASSERT_TRUE(framed.ok());
    auto ids = decodeExternalFiles("files.img", *framed);
    ASSERT_FALSE(ids.ok());
    EXPECT_THAT(ids.error().describe(), HasSubstr("files.img: entry 1 (at offset 8): no type"));
}

} // namespace
