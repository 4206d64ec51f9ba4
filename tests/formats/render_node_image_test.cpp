// The render-node image codec (amdgpu-renderD-<id>.img).
#include "formats/render_node_image.h"

#include "criu-amdgpu.pb-c.h"
#include "formats/proto_image.h"
#include "temp_dir.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using base::ErrorCode;
using ::testing::HasSubstr;

class RenderNodeImageTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto s = formats::openDirectoryStore(dir_.path());
        ASSERT_TRUE(s.ok());
        store_ = std::move(*s);
    }
    testsupport::TempDir dir_;
    std::unique_ptr<formats::ImageStore> store_;
};

formats::RenderNodeImage sample() {
    formats::RenderNodeImage img;
    img.gpuId = 0x59ea;
    img.id = 12;
    img.renderMinor = 129;
    formats::DrmBoEntry a;
    a.addr = 0x7f0000001000;
    a.size = 2 << 20;
    a.offset = 0x100000;
    a.allocFlags = 0x40;
    a.alignment = 4096;
    a.preferredDomains = 4;
    a.handle = 1;
    a.vms = {{0x400000, 2 << 20, 0, 0xe}, {0x800000, 4096, 0x1000, 0x2}};
    a.checksum = content::ContentChecksum{content::DigestKind::Xxh3_64, 0x0123456789abcdefull};
    formats::DrmBoEntry b;
    b.size = 4096;
    b.handle = 2;
    b.isImport = true;
    b.sharing = formats::BoSharing{0x8000000000001234ull, true};
    img.bos = {a, b};
    img.privData = std::string("queues\0state", 12);
    return img;
}

TEST_F(RenderNodeImageTest,
       GivenAnImageWithBosAndMappings_WhenWrittenAndRead_ThenEveryFieldSurvives) {
    ASSERT_TRUE(formats::writeRenderNodeImage(*store_, sample()).ok());

    auto r = formats::readRenderNodeImage(*store_, 12);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->gpuId, 0x59eau);
    EXPECT_EQ(r->id, 12u);
    EXPECT_EQ(r->renderMinor, 129u);
    EXPECT_FALSE(r->legacyGpuIdOnly);
    EXPECT_EQ(r->privData, std::string("queues\0state", 12));
    ASSERT_EQ(r->bos.size(), 2u);
    const formats::DrmBoEntry& a = r->bos[0];
    EXPECT_EQ(a.addr, 0x7f0000001000u);
    EXPECT_EQ(a.size, 2u << 20);
    EXPECT_EQ(a.offset, 0x100000u);
    EXPECT_EQ(a.allocFlags, 0x40u);
    EXPECT_EQ(a.alignment, 4096u);
    EXPECT_EQ(a.preferredDomains, 4u);
    EXPECT_EQ(a.handle, 1u);
    EXPECT_FALSE(a.isImport);
    ASSERT_TRUE(a.checksum.has_value());
    EXPECT_EQ(*a.checksum,
              (content::ContentChecksum{content::DigestKind::Xxh3_64, 0x0123456789abcdefull}));
    ASSERT_EQ(a.vms.size(), 2u);
    EXPECT_EQ(a.vms[1].addr, 0x800000u);
    EXPECT_EQ(a.vms[1].size, 4096u);
    EXPECT_EQ(a.vms[1].offset, 0x1000u);
    EXPECT_EQ(a.vms[1].flags, 0x2u);
    EXPECT_TRUE(r->bos[1].isImport);
    EXPECT_FALSE(a.sharing.has_value()) << "none recorded, none read";
    ASSERT_TRUE(r->bos[1].sharing.has_value());
    EXPECT_EQ(r->bos[1].sharing->key, 0x8000000000001234ull);
    EXPECT_TRUE(r->bos[1].sharing->follower);
    EXPECT_FALSE(r->bos[1].checksum.has_value());
    EXPECT_TRUE(r->bos[1].vms.empty());
}

TEST_F(RenderNodeImageTest,
       GivenChecksumsOfBothKinds_WhenWritten_ThenXxh3GoesToField101AndFnvTo100) {
    formats::RenderNodeImage img = sample();
    img.bos[1].checksum = content::ContentChecksum{content::DigestKind::Fnv1a64, 0x42};
    ASSERT_TRUE(formats::writeRenderNodeImage(*store_, img).ok());

    auto raw = formats::readProtoImage<CriuRenderNode>(*store_, formats::renderNodeImageName(12),
                                                       &criu_render_node__descriptor);
    ASSERT_TRUE(raw.ok());
    const ::DrmBoEntry* a = raw.value()->bo_entries[0];
    const ::DrmBoEntry* b = raw.value()->bo_entries[1];
    EXPECT_TRUE(a->has_contents_xxh3_64 && !a->has_contents_fnv1a64);
    EXPECT_EQ(a->contents_xxh3_64, 0x0123456789abcdefull);
    EXPECT_TRUE(b->has_contents_fnv1a64 && !b->has_contents_xxh3_64) << "as earlier versions wrote";
    auto r = formats::readRenderNodeImage(*store_, 12);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r->bos[1].checksum, (content::ContentChecksum{content::DigestKind::Fnv1a64, 0x42}));
}

TEST_F(RenderNodeImageTest, GivenAnImageWithNoBos_WhenRead_ThenItIsNotLegacy) {
    formats::RenderNodeImage img;
    img.gpuId = 0x1111;
    img.id = 3;
    ASSERT_TRUE(formats::writeRenderNodeImage(*store_, img).ok());

    auto r = formats::readRenderNodeImage(*store_, 3);

    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->bos.empty());
    EXPECT_FALSE(r->legacyGpuIdOnly);
}

TEST_F(RenderNodeImageTest, GivenALegacyImageWithOnlyGpuId_WhenRead_ThenLegacyFlagAndTheAskedId) {
    CriuRenderNode rn;
    criu_render_node__init(&rn);
    rn.has_gpu_id = true;
    rn.gpu_id = 0x59ea;
    ASSERT_TRUE(formats::writeProtoImage(*store_, formats::renderNodeImageName(4), &rn.base).ok());

    auto r = formats::readRenderNodeImage(*store_, 4);

    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_TRUE(r->legacyGpuIdOnly);
    EXPECT_EQ(r->gpuId, 0x59eau);
    EXPECT_EQ(r->id, 4u);
    EXPECT_TRUE(r->bos.empty());
}

TEST_F(RenderNodeImageTest,
       GivenNumOfBosDisagreeingWithTheList_WhenRead_ThenImageErrorNamingTheFile) {
    DrmBoEntry bo;
    drm_bo_entry__init(&bo);
    bo.has_size = bo.has_handle = true;
    bo.size = 4096;
    DrmBoEntry* bos[] = {&bo};
    CriuRenderNode rn;
    criu_render_node__init(&rn);
    rn.has_gpu_id = rn.has_num_of_bos = true;
    rn.num_of_bos = 3;
    rn.n_bo_entries = 1;
    rn.bo_entries = bos;
    ASSERT_TRUE(formats::writeProtoImage(*store_, formats::renderNodeImageName(5), &rn.base).ok());

    auto r = formats::readRenderNodeImage(*store_, 5);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("amdgpu-renderD-5.img"));
    EXPECT_THAT(r.error().describe(), HasSubstr("3 BOs"));
}

TEST_F(RenderNodeImageTest, GivenNumOfVmsDisagreeingWithTheList_WhenRead_ThenImageError) {
    DrmBoEntry bo;
    drm_bo_entry__init(&bo);
    bo.has_size = bo.has_handle = bo.has_num_of_vms = true;
    bo.size = 4096;
    bo.num_of_vms = 2;
    DrmBoEntry* bos[] = {&bo};
    CriuRenderNode rn;
    criu_render_node__init(&rn);
    rn.has_gpu_id = rn.has_num_of_bos = true;
    rn.num_of_bos = 1;
    rn.n_bo_entries = 1;
    rn.bo_entries = bos;
    ASSERT_TRUE(formats::writeProtoImage(*store_, formats::renderNodeImageName(6), &rn.base).ok());

    auto r = formats::readRenderNodeImage(*store_, 6);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("2 mappings"));
}

TEST_F(RenderNodeImageTest, GivenABoWithoutSize_WhenRead_ThenImageErrorSayingSo) {
    DrmBoEntry bo;
    drm_bo_entry__init(&bo);
    bo.has_handle = true;
    DrmBoEntry* bos[] = {&bo};
    CriuRenderNode rn;
    criu_render_node__init(&rn);
    rn.has_gpu_id = true;
    rn.n_bo_entries = 1;
    rn.bo_entries = bos;
    ASSERT_TRUE(formats::writeProtoImage(*store_, formats::renderNodeImageName(7), &rn.base).ok());

    auto r = formats::readRenderNodeImage(*store_, 7);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("size"));
}

TEST_F(RenderNodeImageTest, GivenNoGpuId_WhenRead_ThenImageErrorSayingSo) {
    CriuRenderNode rn;
    criu_render_node__init(&rn);
    rn.has_id = true;
    rn.id = 8;
    ASSERT_TRUE(formats::writeProtoImage(*store_, formats::renderNodeImageName(8), &rn.base).ok());

    auto r = formats::readRenderNodeImage(*store_, 8);

    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::Image);
    EXPECT_THAT(r.error().describe(), HasSubstr("amdgpu-renderD-8.img lacks gpu_id"));
}

TEST(RenderNodeImageNames, GivenIdsAndMinor_WhenNamed_ThenTheReferencePluginLayoutIsUsed) {
    EXPECT_EQ(formats::renderNodeImageName(12), "amdgpu-renderD-12.img");
    EXPECT_EQ(formats::drmPagesImageName(12, 129, 0x1a), "amdgpu-drm-pages-12-129-001a.img");
}

} // namespace

TEST_F(RenderNodeImageTest, GivenSharing_WhenWritten_ThenItGoesToFields102And103) {
    ASSERT_TRUE(formats::writeRenderNodeImage(*store_, sample()).ok());
    auto raw = formats::readProtoImage<CriuRenderNode>(*store_, formats::renderNodeImageName(12),
                                                       &criu_render_node__descriptor);
    ASSERT_TRUE(raw.ok());
    const ::DrmBoEntry* b = raw.value()->bo_entries[1];
    EXPECT_TRUE(b->has_share_key && b->has_share_follower);
    EXPECT_EQ(b->share_key, 0x8000000000001234ull);
    EXPECT_TRUE(b->share_follower);
    EXPECT_FALSE(raw.value()->bo_entries[0]->has_share_key);
    const ProtobufCFieldDescriptor* key =
        protobuf_c_message_descriptor_get_field_by_name(&drm_bo_entry__descriptor, "share_key");
    const ProtobufCFieldDescriptor* follower = protobuf_c_message_descriptor_get_field_by_name(
        &drm_bo_entry__descriptor, "share_follower");
    ASSERT_TRUE(key && follower);
    EXPECT_EQ(key->id, 102u) << "a project field number (>= 100), which CRIU's plugin skips";
    EXPECT_EQ(follower->id, 103u);
}

TEST_F(RenderNodeImageTest,
       GivenAFollowerFlagWithoutAShareKey_WhenRead_ThenAnImageErrorNamesTheBo) {
    formats::RenderNodeImage img = sample();
    ASSERT_TRUE(formats::writeRenderNodeImage(*store_, img).ok());
    auto raw = formats::readProtoImage<CriuRenderNode>(*store_, formats::renderNodeImageName(12),
                                                       &criu_render_node__descriptor);
    ASSERT_TRUE(raw.ok());
    raw.value()->bo_entries[1]->has_share_key = false;
    ASSERT_TRUE(
        formats::writeProtoImage(*store_, formats::renderNodeImageName(12), &raw.value()->base)
            .ok());
    auto r = formats::readRenderNodeImage(*store_, 12);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().describe().find("amdgpu-renderD-12.img: BO 1 is marked share_follower but "
                                        "has no share_key"),
              std::string::npos)
        << r.error().describe();
}

TEST_F(RenderNodeImageTest,
       GivenContextsAndSyncobjs_WhenWrittenAndRead_ThenEachSurvivesInFields101And102) {
    formats::RenderNodeImage img = sample();
    img.contexts = {{1, 0}, {3, 0x8}};
    img.syncobjs = {{1, true, std::nullopt}, {2, false, std::nullopt}, {4, false, 7}};
    ASSERT_TRUE(formats::writeRenderNodeImage(*store_, img).ok());
    auto r = formats::readRenderNodeImage(*store_, 12);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    ASSERT_EQ(r->contexts.size(), 2u);
    EXPECT_EQ(r->contexts[1].id, 3u);
    EXPECT_EQ(r->contexts[1].query2Flags, 0x8u);
    ASSERT_EQ(r->syncobjs.size(), 3u);
    EXPECT_TRUE(r->syncobjs[0].signaled);
    EXPECT_FALSE(r->syncobjs[0].timelinePoint);
    EXPECT_FALSE(r->syncobjs[1].signaled);
    EXPECT_EQ(r->syncobjs[2].handle, 4u);
    EXPECT_EQ(r->syncobjs[2].timelinePoint, std::optional<uint64_t>(7));
    const ProtobufCFieldDescriptor* contexts = protobuf_c_message_descriptor_get_field_by_name(
        &criu_render_node__descriptor, "ctx_entries");
    const ProtobufCFieldDescriptor* syncobjs = protobuf_c_message_descriptor_get_field_by_name(
        &criu_render_node__descriptor, "syncobj_entries");
    ASSERT_TRUE(contexts && syncobjs);
    EXPECT_EQ(contexts->id, 101u) << "a project field number (>= 100), which CRIU's plugin skips";
    EXPECT_EQ(syncobjs->id, 102u);
}

TEST_F(RenderNodeImageTest,
       GivenAContextWithoutIdOrASyncobjWithoutHandle_WhenRead_ThenAnImageErrorNamesItAndItsList) {
    formats::RenderNodeImage img = sample();
    img.contexts = {{1, 0}, {2, 0}};
    img.syncobjs = {{1, false, std::nullopt}, {2, false, 3}};
    ASSERT_TRUE(formats::writeRenderNodeImage(*store_, img).ok());
    auto raw = formats::readProtoImage<CriuRenderNode>(*store_, formats::renderNodeImageName(12),
                                                       &criu_render_node__descriptor);
    ASSERT_TRUE(raw.ok());
    raw.value()->ctx_entries[1]->has_id = false;
    ASSERT_TRUE(
        formats::writeProtoImage(*store_, formats::renderNodeImageName(12), &raw.value()->base)
            .ok());
    auto r = formats::readRenderNodeImage(*store_, 12);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(),
                HasSubstr("amdgpu-renderD-12.img: context 1 (ctx_entries) lacks its id"));
    raw.value()->ctx_entries[1]->has_id = true;
    raw.value()->syncobj_entries[1]->has_handle = false;
    ASSERT_TRUE(
        formats::writeProtoImage(*store_, formats::renderNodeImageName(12), &raw.value()->base)
            .ok());
    r = formats::readRenderNodeImage(*store_, 12);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error().describe(),
                HasSubstr("amdgpu-renderD-12.img: syncobj 1 (syncobj_entries) lacks its handle"));
}
