// Tests of the peak-memory model of the published records (model/published_memory.*): closed forms
// of each phase's bytes from the shapes and configs of the upstream code, and the phase structure.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "model/architecture.hpp"
#include "model/published.hpp"
#include "model/published_memory.hpp"
#include "model/published_predict.hpp"

using namespace chunkflow;

namespace {

const std::string kDir = std::string(CHUNKFLOW_SOURCE_DIR) + "/traces/published";

PublishedRecord record(const std::string& id) { return read_published_record(kDir + "/" + id + ".json"); }

const MemoryPhase& phase(const PeakMemoryEstimate& e, const std::string& name) {
  for (const MemoryPhase& p : e.phases)
    if (p.name == name) return p;
  FAIL("no phase " << name);
  return e.phases.front();
}

double part(const MemoryPhase& p, const std::string& name) {
  const auto it = p.parts_bytes.find(name);
  return it == p.parts_bytes.end() ? 0.0 : it->second;
}

Workload wan(const std::string& model, int64_t height, int64_t width, int ulysses) {
  Workload w;
  w.model = model;
  w.height = height;
  w.width = width;
  w.frames = 81;
  w.ulysses_degree = ulysses;
  return w;
}

}  // namespace

TEST_CASE("umT5-XXL from its config: 256384·4096 + 24·(4·4096² + 3·4096·10240 + 2·4096 + 32·64) + 4096") {
  const int64_t block = 4LL * 4096 * 4096 + 3LL * 4096 * 10240 + 2 * 4096 + 32 * 64;
  CHECK(umt5_xxl_block_params() == block);
  CHECK(umt5_xxl_encoder_params() == 256384LL * 4096 + 24 * block + 4096);
  // The bf16 checkpoint models_t5_umt5-xxl-enc-bf16.pth is 11.4 GB.
  CHECK(2.0 * double(umt5_xxl_encoder_params()) == Approx(11.36e9).epsilon(0.001));
}

TEST_CASE("Wan VAE decoder caches: 2 frames · 4 B · H·W · (672 + 1152/4 + 2496/16 + 4240/64) = 9458·H·W") {
  for (auto [h, w] : {std::pair<int64_t, int64_t>{480, 832}, {720, 1280}, {64, 64}}) {
    const double hw = double(h) * double(w);
    CHECK(wan_vae_decode_cache_bytes(h, w) == Approx(8.0 * hw * (672.0 + 1152.0 / 4 + 2496.0 / 16 + 4240.0 / 64)));
    CHECK(wan_vae_decode_cache_bytes(h, w) == Approx(9458.0 * hw));
    // Working set of a full-resolution residual block (5.5 units of 96 ch · 4 frames · fp32) and the
    // 3-channel fp32 frames decoded before the last chunk.
    CHECK(wan_vae_decode_bytes(h, w, 81) == Approx(9458.0 * hw + 5.5 * 96 * 4 * 4 * hw + 12.0 * 77 * hw));
  }
  // The decode grows with the frame count only through the output it has accumulated.
  CHECK(wan_vae_decode_bytes(720, 1280, 121) - wan_vae_decode_bytes(720, 1280, 81) == Approx(12.0 * 40 * 720 * 1280));
}

TEST_CASE("Wan2.2 DiT activations: per-token timestep e, e0 of the whole sequence + the block's tensors per rank") {
  const DitArchitecture& a = architecture("wan2.2-t2v-a14b");
  const double d = double(a.hidden), hd = double(a.head_dim);
  SECTION("one GPU: 28d (e, e0) + 4d (fp32 residual) + 24d (block modulation) + 34d (RoPE of k) per token, + 8·hd") {
    const Workload w = wan("wan2.2-t2v-a14b", 720, 1280, 1);
    const double s = 21.0 * 45 * 80;  // 75,600 tokens
    const WanActivationBytes x = wan_dit_activation_bytes(w, 1, false);
    CHECK(x.time_embedding == Approx(28 * d * s));
    CHECK(x.residual == Approx(4 * d * s));
    CHECK(x.block_modulation == Approx(24 * d * s));
    CHECK(x.block_transient == Approx(34 * d * s));  // FFN moment 4d + 4F is smaller at F = 2.7d
    CHECK(x.total() == Approx(90 * d * s + 8 * hd * s));
  }
  SECTION("P-way Ulysses: the full-sequence terms stay, the local ones divide by P; block 0's bf16 input is whole") {
    const double s = 21.0 * 30 * 52;  // 32,760, divisible by 4 and 8
    for (int p : {4, 8}) {
      const WanActivationBytes x = wan_dit_activation_bytes(wan("wan2.2-t2v-a14b", 480, 832, p), p, false);
      const double s_loc = s / p;
      CHECK(x.time_embedding == Approx(28 * d * s));
      CHECK(x.residual == Approx(std::max(4 * d * s_loc, 2 * d * s)));
      CHECK(x.block_modulation == Approx(24 * d * s_loc));
      CHECK(x.block_transient == Approx(32 * d * s_loc));
      CHECK(x.rope_tables == Approx(16 * hd * s));
    }
    // More ranks, fewer bytes per rank, never below the replicated terms.
    const double p4 = wan_dit_activation_bytes(wan("wan2.2-t2v-a14b", 480, 832, 4), 4, false).total();
    const double p8 = wan_dit_activation_bytes(wan("wan2.2-t2v-a14b", 480, 832, 8), 8, false).total();
    CHECK(p8 < p4);
    CHECK(p8 > 28 * d * s + 2 * d * s);
  }
  SECTION("Wan2.1: one timestep vector per sample; fp32 weights outside FSDP add the widest Linear's bf16 cast") {
    const DitArchitecture& small = architecture("wan2.1-t2v-1.3b");
    const double ds = double(small.hidden), f = double(small.ffn), s = 21.0 * 30 * 52;
    const WanActivationBytes x = wan_dit_activation_bytes(wan("wan2.1-t2v-1.3b", 480, 832, 1), 1, true);
    CHECK(x.time_embedding == 0);
    CHECK(x.block_modulation == 0);
    CHECK(x.block_transient == Approx(std::max(34 * ds, 4 * ds + 4 * f) * s));
    CHECK(x.weight_cast == Approx(2 * ds * f));
  }
}

TEST_CASE("diffusers FLUX forward: 16 bf16 activations of d per joint token at the single block's RoPE") {
  Workload w;
  w.model = "flux.1-dev";
  w.height = w.width = 1024;
  w.frames = 1;
  const double joint = 4096 + 512;
  CHECK(flux_diffusers_forward_activation_bytes(w) == Approx(16 * 2 * 3072 * joint));
}

TEST_CASE("Wan pipeline phases: FSDP keeps every expert's fp32 shard and bf16 root, --offload_model frees the DiT before decoding") {
  const DitArchitecture& a = architecture("wan2.2-t2v-a14b");
  const double params = double(a.params_total()), non_block = double(a.non_block_params);
  SECTION("4 GPUs, --dit_fsdp --t5_fsdp") {
    const PublishedRecord r = record("wan22-720p-4gpu-mem");
    const PeakMemoryEstimate e = published_peak_memory(r);
    REQUIRE(e.phases.size() == 3);
    const MemoryPhase& decode = phase(e, "vae_decode");
    CHECK(part(decode, "dit_weights") == Approx(2 * params * 4 / 4 + 2 * non_block * 2));
    CHECK(part(decode, "text_encoder_weights") ==
          Approx(2.0 * double(umt5_xxl_encoder_params()) / 4 + 2.0 * 256384 * 4096));
    CHECK(part(decode, "vae_workspace") == Approx(wan_vae_decode_bytes(720, 1280, 81)));
    // Encoding gathers one T5 block beside the shards and the root.
    CHECK(part(phase(e, "text_encode"), "text_encoder_weights") - part(decode, "text_encoder_weights") ==
          Approx(2.0 * double(umt5_xxl_block_params())));
    const MemoryPhase& denoise = phase(e, "denoise");
    CHECK(part(denoise, "dit_weights") - part(decode, "dit_weights") == Approx(2.0 * double(a.block_kinds.front().params())));
    CHECK(part(denoise, "activations") == Approx(wan_dit_activation_bytes(r.workload, 4, false).total()));
  }
  SECTION("1 GPU, --offload_model True --convert_model_dtype") {
    const PeakMemoryEstimate e = published_peak_memory(record("wan22-480p-1gpu-mem"));
    CHECK(part(phase(e, "denoise"), "dit_weights") == Approx(2 * params));  // one expert, bf16
    CHECK(part(phase(e, "vae_decode"), "dit_weights") == 0);
    CHECK(part(phase(e, "vae_decode"), "text_encoder_weights") == 0);
    CHECK(part(phase(e, "text_encode"), "text_encoder_weights") == Approx(2.0 * double(umt5_xxl_encoder_params())));
  }
  SECTION("the peak is the largest phase, and the prediction is that peak") {
    for (const std::string id : {"wan22-480p-1gpu-mem", "wan22-480p-8gpu-mem", "wan22-720p-8gpu-mem", "diffusers-flux-l40-eager-mem"}) {
      const PublishedRecord r = record(id);
      const PeakMemoryEstimate e = published_peak_memory(r);
      double largest = 0;
      for (const MemoryPhase& p : e.phases) largest = std::max(largest, p.bytes());
      CHECK(e.peak_bytes == largest);
      CHECK(predict_published(r).predicted == e.peak_bytes);
    }
  }
}

TEST_CASE("the diffusers FLUX memory figure is GiB (max_memory_allocated / 1024**3) and exceeds the bf16 weights") {
  const PublishedRecord r = record("diffusers-flux-l40-eager-mem");
  CHECK(r.value == Approx(22.6 * std::pow(2.0, 30)));
  CHECK(r.value > 2.0 * double(architecture("flux.1-dev").params_total()));
}
