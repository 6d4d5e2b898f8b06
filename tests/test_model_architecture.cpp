// Tests of model/architecture: parameter totals and block programs against
// shared/reference/dit-architectures.md §1–§2.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "model/architecture.hpp"
#include "model/error.hpp"

using namespace chunkflow;

namespace {

int count_stages(const BlockKind& k, BlockStage::Kind kind) {
  int n = 0;
  for (const BlockStage& s : k.program) n += s.kind == kind;
  return n;
}

std::string linear_name(const BlockKind& k, const BlockStage& s) { return k.linears[size_t(s.linear_index)].name; }

}  // namespace

TEST_CASE("parameter totals equal the published counts exactly (dit-architectures.md §1)") {
  CHECK(architecture("flux.1-dev").params_total() == 11'901'408'320);
  CHECK(architecture("wan2.1-t2v-14b").params_total() == 14'288'491'584);
  CHECK(architecture("wan2.1-t2v-1.3b").params_total() == 1'418'996'800);
  CHECK(architecture("hunyuanvideo").params_total() == 12'821'012'544);
}

TEST_CASE("per-block parameter counts equal the reference's instantiated block counts (§2)") {
  const DitArchitecture& flux = architecture("flux.1-dev");
  REQUIRE(flux.block_kinds.size() == 2);
  CHECK(flux.block_kinds[0].params() == 339'831'296);
  CHECK(flux.block_kinds[1].params() == 141'591'808);
  CHECK(flux.block_kinds[0].count == 19);
  CHECK(flux.block_kinds[1].count == 38);
  CHECK(flux.non_block_params == 64'124'992);

  const DitArchitecture& hy = architecture("hunyuanvideo");
  CHECK(hy.block_kinds[0].params() == 339'831'296);
  CHECK(hy.block_kinds[1].params() == 141'591'808);
  CHECK(hy.block_kinds[0].count == 20);
  CHECK(hy.block_kinds[1].count == 40);
  CHECK(hy.non_block_params == 360'714'304);

  const DitArchitecture& w14 = architecture("wan2.1-t2v-14b");
  REQUIRE(w14.block_kinds.size() == 1);
  CHECK(w14.block_kinds[0].params() == 351'394'304);
  CHECK(w14.block_kinds[0].other_params == 61'440);
  CHECK(w14.non_block_params == 232'719'424);
  CHECK(w14.block_count() == 40);

  const DitArchitecture& w13 = architecture("wan2.1-t2v-1.3b");
  CHECK(w13.block_kinds[0].params() == 46'440'704);
  CHECK(w13.block_kinds[0].other_params == 18'432);
  CHECK(w13.non_block_params == 25'775'680);
  CHECK(w13.block_count() == 30);
}

TEST_CASE("individual linear shapes match the reference tables (§2)") {
  const BlockKind& fd = architecture("flux.1-dev").block_kinds[0];
  CHECK(fd.linears[0].name == "img_mod.lin");
  CHECK(fd.linears[0].params() == 56'641'536);
  CHECK(fd.linears[2].params() == 28'320'768);  // img_attn.qkv
  const BlockKind& fs = architecture("flux.1-dev").block_kinds[1];
  CHECK(fs.linears[1].name == "linear1");
  CHECK(fs.linears[1].params() == 66'081'792);
  CHECK(fs.linears[2].params() == 47'188'992);
  const BlockKind& w = architecture("wan2.1-t2v-14b").block_kinds[0];
  CHECK(w.linears[8].name == "ffn.0");
  CHECK(w.linears[8].params() == 70'792'704);
  CHECK(w.linears[9].params() == 70'784'000);
  CHECK(w.linears[0].params() == 26'219'520);
  CHECK(architecture("wan2.1-t2v-1.3b").block_kinds[0].linears[8].params() == 13'771'520);
}

TEST_CASE("every program uses every linear exactly once and lists linears in layout order") {
  for (const std::string& id : architecture_ids()) {
    for (const BlockKind& k : architecture(id).block_kinds) {
      INFO(id << " " << k.name);
      int next = 0;
      for (const BlockStage& s : k.program) {
        if (s.kind != BlockStage::Kind::linear) continue;
        CHECK(s.linear_index == next);  // first use order == weight-layout order
        ++next;
      }
      CHECK(next == int(k.linears.size()));
    }
  }
}

TEST_CASE("each attention has four all-to-alls: q, k, v before it and o after it (§6)") {
  const BlockKind& w = architecture("wan2.1-t2v-14b").block_kinds[0];
  CHECK(count_stages(w, BlockStage::Kind::all_to_all) == 4);
  CHECK(count_stages(w, BlockStage::Kind::attention) == 2);  // self (Ulysses) + cross (local)
  // q,k,v → a2a q,k,v → self → a2a o → o → cross q,k,v → cross attention → cross o → ffn.0 → ffn.2
  REQUIRE(w.program.size() == 16);
  CHECK(linear_name(w, w.program[0]) == "self_attn.q");
  CHECK(w.program[3].kind == BlockStage::Kind::all_to_all);
  CHECK(w.program[3].tensor == AllToAllTensor::q);
  CHECK(w.program[6].kind == BlockStage::Kind::attention);
  CHECK(w.program[6].attention == AttentionKind::self_video);
  CHECK(w.program[7].tensor == AllToAllTensor::o);
  CHECK(linear_name(w, w.program[8]) == "self_attn.o");
  CHECK(linear_name(w, w.program[11]) == "cross_attn.v");
  CHECK(w.program[12].attention == AttentionKind::cross_text);
  CHECK(linear_name(w, w.program[13]) == "cross_attn.o");
  CHECK(linear_name(w, w.program[15]) == "ffn.2");

  for (const char* id : {"flux.1-dev", "hunyuanvideo"}) {
    for (const BlockKind& k : architecture(id).block_kinds) {
      CHECK(count_stages(k, BlockStage::Kind::all_to_all) == 4);
      CHECK(count_stages(k, BlockStage::Kind::attention) == 1);
    }
  }
  const BlockKind& s = architecture("flux.1-dev").block_kinds[1];
  REQUIRE(s.program.size() == 8);
  CHECK(linear_name(s, s.program[0]) == "modulation.lin");
  CHECK(linear_name(s, s.program[1]) == "linear1");
  CHECK(s.program[5].attention == AttentionKind::joint);
  CHECK(linear_name(s, s.program[7]) == "linear2");
}

TEST_CASE("token scopes and Ulysses text modes follow the reference (§2, §6)") {
  const DitArchitecture& flux = architecture("flux.1-dev");
  CHECK(flux.text_mode == UlyssesTextMode::split);
  CHECK(flux.text_tokens == 512);
  CHECK_FALSE(flux.video);
  const DitArchitecture& hy = architecture("hunyuanvideo");
  CHECK(hy.text_mode == UlyssesTextMode::replicated);
  CHECK(hy.text_tokens == 256);
  CHECK(hy.video);
  CHECK(hy.vae_temporal_stride == 4);
  const DitArchitecture& w = architecture("wan2.1-t2v-14b");
  CHECK(w.text_mode == UlyssesTextMode::none);
  CHECK(w.text_tokens == 512);

  for (const BlockKind& k : {flux.block_kinds[0], hy.block_kinds[0]}) {
    for (const LinearSpec& l : k.linears) {
      INFO(l.name);
      if (l.name.rfind("img_mod", 0) == 0 || l.name.rfind("txt_mod", 0) == 0)
        CHECK(l.scope == TokenScope::sample);
      else if (l.name.rfind("img", 0) == 0)
        CHECK(l.scope == TokenScope::video);
      else
        CHECK(l.scope == TokenScope::text);
    }
  }
  for (const BlockKind& k : {flux.block_kinds[1], hy.block_kinds[1]}) {
    CHECK(k.linears[0].scope == TokenScope::sample);
    CHECK(k.linears[1].scope == TokenScope::joint);
    CHECK(k.linears[2].scope == TokenScope::joint);
  }
  for (const LinearSpec& l : w.block_kinds[0].linears) {
    INFO(l.name);
    const bool text = l.name == "cross_attn.k" || l.name == "cross_attn.v";
    CHECK(l.scope == (text ? TokenScope::text : TokenScope::video));
  }
}

TEST_CASE("hidden size equals heads times head_dim for every architecture") {
  std::set<std::string> ids;
  for (const std::string& id : architecture_ids()) {
    const DitArchitecture& a = architecture(id);
    CHECK(a.hidden == int64_t(a.heads) * a.head_dim);
    ids.insert(id);
  }
  CHECK(ids == std::set<std::string>{"flux.1-dev", "wan2.1-t2v-14b", "wan2.1-t2v-1.3b", "hunyuanvideo", "wan2.2-t2v-a14b"});
}

TEST_CASE("kind_of_block maps stack positions to block kinds in stack order") {
  const DitArchitecture& flux = architecture("flux.1-dev");
  CHECK(flux.block_count() == 57);
  CHECK(flux.kind_of_block(0) == 0);
  CHECK(flux.kind_of_block(18) == 0);
  CHECK(flux.kind_of_block(19) == 1);
  CHECK(flux.kind_of_block(56) == 1);
  CHECK_THROWS_AS(flux.kind_of_block(57), std::out_of_range);
  CHECK_THROWS_AS(flux.kind_of_block(-1), std::out_of_range);
}

TEST_CASE("an unknown architecture id is an InputError naming the field and the known ids") {
  try {
    architecture("flux.2", "/workload/model");
    FAIL("no exception");
  } catch (const InputError& e) {
    CHECK(e.field() == "/workload/model");
    CHECK(e.file().empty());
    const std::string what = e.what();
    CHECK(what.find("/workload/model: ") == 0);
    CHECK(what.find("wan2.1-t2v-14b") != std::string::npos);
    CHECK(what.find("flux.2") != std::string::npos);
  }
}

TEST_CASE("InputError message is file: field: message with empty parts left out") {
  CHECK(std::string(InputError("a.json", "/x", "m").what()) == "a.json: /x: m");
  CHECK(std::string(InputError("", "--frames", "m").what()) == "--frames: m");
  CHECK(std::string(InputError("", "", "m").what()) == "m");
}
