// Predictions for the published records; formulas in model/published_predict.hpp.
#include "model/published_predict.hpp"

#include <algorithm>
#include <cmath>

#include "model/analytical.hpp"
#include "model/architecture.hpp"
#include "model/error.hpp"
#include "model/generation.hpp"
#include "model/kernel_model.hpp"
#include "model/published_memory.hpp"

namespace chunkflow {

namespace {

// Host cost of a compiled (torch.compile / fused) kernel relative to an eager PyTorch op: the
// Python dispatch is gone, the launch stays (assumed 0.4).
constexpr double kCompiledHostFactor = 0.4;
// yunchang ring attention: per ring step one flash-attention call, the out/LSE update
// (torch.jit.script-ed _update_out_and_lse, fused to ≈ 2 kernels) and a send/recv pair: 5 kernels
// (assumed from yunchang ring_flash_attn).
constexpr int kRingKernelsPerStep = 5;
// The ring's output merge (ring-flash-attention utils.py, as yunchang imports it): the first step's
// block output is cast to fp32 (read 2 B, write 4 B per output element), every later step merges
// its block into the fp32 running output with the LSE rule (_update_out_and_lse, @torch.jit.script:
// its elementwise chain fused into one pass reads the fp32 output and the bf16 block and writes the
// fp32 output, 10 B per element; unfused it would be ≈ 38 B), and the result is cast back to the
// input dtype (6 B). Bytes per output element of one ring attention: (r − 1)·10 + 12. HBM-bound.
constexpr double kRingMergeStepBytesPerElement = 10;
constexpr double kRingMergeCastBytesPerElement = 12;
// A ring-only layout (Ulysses group of one rank) runs yunchang's all_to_all_4D with
// seq_world_size 1: no all_to_all_single (output = input_t), and the q/k/v side's transposes swap
// dimensions of size 1 (batch 1, P = 1), so .contiguous() copies nothing; the output side's
// permutation (heads ↔ sequence) is real, two .contiguous() copies of the output (r2 w2 each):
// 8 B per output element and 2 kernels instead of the Ulysses pack/unpack of 4 all-to-alls
// (yunchang comm/all_to_all.py all_to_all_4D; DeepSpeed sequence/layer.py has the same transposes).
constexpr double kRingOnlyRepackBytesPerElement = 8;
constexpr int kRingOnlyRepackKernels = 2;
// Under torch.compile the ring's P2P exchange (torch.distributed batch_isend_irecv / P2POp, as
// yunchang's RingComm issues it) is not traceable by dynamo: the graph breaks around it and the ring
// loop runs eagerly (pytorch/pytorch issue #121386 "torch.compile + ring attention" shows the break;
// PR #161213 makes batch_isend_irecv compilable only behind TORCHDYNAMO_ENABLE_P2P_COMPILATION=1, off
// by default, after the torch versions xfuser 0.4 used). Its kernels are issued at the eager host
// cost whether or not the stack is compiled.
// All-to-all bus bandwidth per GPU (bytes leaving one GPU per second, nccl-tests busbw), large
// messages: 8× H100 SXM (NVLink4, NVSwitch) 320 GB/s, 8× A100 SXM 210 GB/s, 2×4 PCIe Gen5 boxes
// 12 GB/s (NVIDIA GTC25 S72583, gpu-catalogue.md §2.3); 4× H100 SXM `alltoall_perf` at 500 MB with
// NCCL's defaults 334.9 GB/s (NVIDIA/nccl #2169, the thread's run without -R2 -x2). The 120.8 GB/s
// that gpu-catalogue.md §2.3 and published-measurements.md (a2a-sxm) quote from the same thread is
// its user-buffer-registration run (-R2 -x2), which the reporter says is "low across all message
// sizes": not NCCL's default path, which torch.distributed.all_to_all_single takes. H800 (NVLink cut
// to 8 links): "plan on ~160 GB/s per GPU" (gpu-catalogue.md §3.3, DeepEP's 153–158 measured).
// H200 and H20 carry H100's NVLink4 ×18. Smaller buffers pay the collective latency α up front
// (t = α + bytes / busbw, systems-and-hardware.md §4).
// All-gather (FSDP) ring busbw: 8× H100 370 GB/s, 8× A100 232 GB/s ([GTC24]); H800 in the same
// 160/450 ratio.
// Ring attention P2P one way: H100 NVLink 371 GB/s (p2pBandwidthLatencyTest, NVIDIA/nccl #1264).
struct Interconnect {
  double all_to_all_bytes_per_s, all_gather_bytes_per_s, p2p_bytes_per_s;
};
Interconnect interconnect(const std::string& gpu) {
  if (gpu == "h100-sxm" || gpu == "h200" || gpu == "h20") return {320e9, 370e9, 371e9};
  if (gpu == "h800-sxm") return {160e9, 370e9 * 160.0 / 450.0, 160e9};
  if (gpu == "a100-sxm-80gb") return {210e9, 232e9, 230e9};
  return {12e9, 24e9, 12e9};  // PCIe-only boxes
}

}  // namespace

double published_all_to_all_bytes_per_s(const std::string& gpu) { return interconnect(gpu).all_to_all_bytes_per_s; }

namespace {

// Pageable host memory (a whole model's .to()): staged through a driver bounce buffer, "much
// slower" than pinned (systems-and-hardware.md §3): half the pinned rate (assumed).
constexpr double kPageableOverPinned = 0.5;

}  // namespace

// [MLE-bench] (gpu-catalogue.md §2.1): with all 8 GPUs of an H200 node busy, the slowest GPU
// sustained 727 TFLOP/s (MSMF) against a median of 752; GPUs of one node differ in sustained clock.
constexpr double kSlowestOf8OverMedian = 727.0 / 752.0;

double slowest_gpu_rate(int gpus) {
  if (gpus <= 1) return 1.0;
  // Sustained rates spread uniformly over a width w below the fastest GPU (assumed shape): the
  // median is 1 − w/2, the expected slowest of N is 1 − w·N/(N+1); w from the 8-GPU figure.
  const double r8 = kSlowestOf8OverMedian;
  const double w = (1.0 - r8) / (8.0 / 9.0 - r8 / 2.0);
  const double n = double(gpus);
  return (1.0 - w * n / (n + 1.0)) / (1.0 - w / 2.0);
}

namespace {

struct ForwardParts {
  double gemm = 0, attention = 0, elementwise = 0, launch = 0, collective = 0, fsdp = 0, offload = 0, non_block = 0;
  double rope_table_h2d = 0;  ///< HunyuanVideo's official pipeline: RoPE tables copied from the host per block
  double kernels = 0;
  double ring_kernels = 0;  ///< of `kernels`: the ring loop's, eager even in a compiled stack
  double gpu() const {
    return gemm + attention + elementwise + launch + collective + fsdp + offload + non_block + rope_table_h2d;
  }
};

// HunyuanVideo's official pipeline (framework "hunyuanvideo": Tencent-Hunyuan/HunyuanVideo
// sample_video.py, xfuser's attention under Ulysses) keeps its RoPE tables in host memory:
// HunyuanVideoSampler.predict builds freqs_cos / freqs_sin with get_nd_rotary_pos_embed on the CPU
// (hyvideo/inference.py; (S_v, head_dim) float32 each), parallelize_transformer chunks them per rank
// on the CPU (S_v / P rows), and apply_rotary_emb (hyvideo/modules/posemb_layers.py) runs
// `cos, sin = cos.to(xq.device), sin.to(xq.device)` in every double- and single-stream block: two
// synchronous copies from pageable memory per block (non_blocking defaults to False, so the host
// waits and nothing overlaps them). Bytes per forward per rank = blocks · 2 · S_v / P · head_dim · 4,
// at the pageable rate (kPageableOverPinned × the pinned H2D rate) plus the H2D latency per copy.
constexpr double kRopeTablesPerBlock = 2;  // cos and sin
constexpr double kRopeTableBytesPerElement = 4;  // float32

ForwardParts forward_parts(const PublishedRecord& r, const NodeSpec& n) {
  const double slowest = slowest_gpu_rate(r.gpu_count);
  Workload w = r.workload;
  const int u = w.ulysses_degree, ring = r.ring_degree;
  w.ulysses_degree = u * ring;  // per-rank shapes of USP: the sequence split u·r ways
  const ForwardCost cost = forward_cost(w);
  const Interconnect ic = interconnect(r.gpu);
  const double hbm = n.hbm_efficiency * n.hbm_bytes_per_s;
  ForwardParts f;
  for (const BlockCost& b : cost.blocks) {
    double block_s = 0;
    for (const StageCost& st : b.stages) {
      if (st.stage.kind == BlockStage::Kind::all_to_all) {
        if (u > 1) {
          const double t = n.collective_latency_s + double(u - 1) / double(u) * st.all_to_all_buffer_bytes / ic.all_to_all_bytes_per_s;
          f.collective += t;
          block_s += t;
        }
        continue;
      }
      StageCost s = st;
      double ring_comm_s = 0;
      if (st.stage.kind == BlockStage::Kind::attention && ring > 1 && st.attention.kv_tokens > 1) {
        // Each ring step attends the local queries to one KV shard of kv/r tokens.
        s.attention.kv_tokens = (st.attention.kv_tokens + ring - 1) / ring;
        double buffer = 0;
        for (const StageCost& a : b.stages)
          if (a.stage.kind == BlockStage::Kind::all_to_all) buffer = std::max(buffer, a.all_to_all_buffer_bytes);
        // K and V shards passed r−1 times, each pass a send/recv with the collective latency.
        ring_comm_s = double(ring - 1) * (2.0 * buffer / ic.p2p_bytes_per_s + n.collective_latency_s);
        f.kernels += double(ring * kRingKernelsPerStep);
        f.ring_kernels += double(ring * kRingKernelsPerStep);
        // The output merge of the ring steps, over this rank's output elements (the per-rank shape
        // splits heads × queries u·r ways, so the element count is the rank's share either way).
        const double out_elements = double(st.attention.batch) * double(st.attention.heads) *
                                    double(st.attention.q_tokens) * double(st.attention.head_dim);
        s.elementwise_bytes += out_elements * (double(ring - 1) * kRingMergeStepBytesPerElement +
                                               kRingMergeCastBytesPerElement);
        if (u == 1) {
          // The per-rank shapes are priced as a ring·1-way Ulysses split, which attaches the
          // Ulysses pack/unpack to this attention: replace it with the ring-only output repack.
          // Its elements are the output's (exact where the text is split or absent, FLUX and Wan;
          // HunyuanVideo's replicated text rows make it approximate).
          for (const ElementwiseOp& op : architecture(w.model).block_kinds[size_t(b.kind)].elementwise) {
            if (!op.ulysses_only || op.attach_linear >= 0 || op.attach_attention != st.stage.attention) continue;
            const double op_bytes = w.compiled ? op.fused_bytes_per_element : op.eager_bytes_per_element;
            const int op_kernels = w.compiled ? op.fused_kernels : op.eager_kernels;
            s.elementwise_bytes -= out_elements * op.width_over_hidden * (op_bytes - kRingOnlyRepackBytesPerElement);
            if (!w.compiled) {  // the repack streams: the op's eager class bytes leave with it
              s.elementwise_row_reduction_bytes -= out_elements * op.width_over_hidden * op.eager_row_reduction_bytes_per_element;
              s.elementwise_broadcast_bytes -= out_elements * op.width_over_hidden * op.eager_broadcast_bytes_per_element;
            }
            s.elementwise_kernels -= op_kernels - kRingOnlyRepackKernels;
          }
        }
      }
      const double ew = elementwise_memory_time_s(s, n);
      const double launch = double(stage_kernels(s)) * n.compute_launch_s;
      // The group waits for its slowest GPU at every collective: the compute-bound core runs at the
      // slowest rank's sustained rate (slowest_gpu_rate, 1 on one GPU).
      const double core = (stage_compute_time_s(s, n) - ew - launch) / slowest;
      const double t = core + ew + launch;
      (st.stage.kind == BlockStage::Kind::linear ? f.gemm : f.attention) += core;
      f.elementwise += ew;
      f.launch += launch;
      f.kernels += stage_kernels(s);
      const double exposed_ring = std::max(0.0, ring_comm_s - core);  // overlapped with the attention
      f.collective += exposed_ring;
      block_s += t + exposed_ring;
    }
    if (r.fsdp && r.gpu_count > 1) {
      // FSDP all-gathers the next block's weights behind this block's compute.
      const double p = double(r.gpu_count);
      const double ag = (p - 1) / p * b.weight_bytes / ic.all_gather_bytes_per_s;
      f.fsdp += std::max(0.0, ag - block_s);
    }
    // group-offload-leaf: what diffusers does (src/diffusers/hooks/group_offloading.py, both the
    // 2025 versions read): every nn.Linear is a group (_GO_LC_SUPPORTED_PYTORCH_LAYERS; norm weights
    // outside a Linear form groups on their parent module); with use_stream=True and the default
    // low_cpu_mem_usage=False, ModuleGroup._init_cpu_param_dict keeps a pinned copy of every
    // parameter (param.data.cpu().pin_memory(), once, at enable_group_offload), so copies are
    // pinned. LazyPrefetchGroupOffloadingHook records the execution order in the first forward and
    // links each group to the next; GroupOffloadingHook.pre_forward of leaf i calls
    // next_group.onload_(), which waits on the host for the side stream (copy i) and enqueues leaf
    // i+1's copies on it (one .to(non_blocking) per parameter tensor, weight and bias apart);
    // post_forward calls offload_(), which with record_stream=False (the benchmark's default)
    // synchronizes the compute stream on the host and swaps the parameters back to the pinned host
    // tensors (no D2H copy). So leaf i+1's copy overlaps leaf i's compute: one leaf of lookahead,
    // Σ_leaves max(copy_{i+1}, compute_i + host path). The serial sum priced here is, per-leaf
    // host cost aside, that schedule's upper bound (no overlap). The diffusers-flux-l40-offload
    // record (1.879 s) lies above even this bound at the catalogue's 25 GB/s (1.54 s), and the
    // overlapped schedule at that rate would be ≈ 1.1–1.2 s, so no schedule of this code closes the
    // gap; a slower host link would (≈ 13 GB/s under the overlapped schedule), or ≈ 1.5–2 ms of host
    // time per leaf. The bound is kept until a source for that box's link rate exists
    // (notes/issue-10.md, Session 6, group offload).
    if (r.offload == "layerwise" || r.offload == "group-offload-leaf") {
      const double copy = b.weight_bytes / n.h2d_bytes_per_s(0) + n.h2d_latency_s;
      f.offload += r.offload == "layerwise" ? std::max(0.0, copy - block_s) : copy;
    }
  }
  // Non-block weights (embedders, time projection, final layer) read once per forward.
  f.non_block = cost.non_block_weight_bytes / hbm;
  if (r.framework == "hunyuanvideo") {
    const double ranks = double(u * ring);
    const double table_bytes = double(cost.tokens.video) / ranks * double(architecture(w.model).head_dim) *
                               kRopeTableBytesPerElement;
    const double copies = double(cost.blocks.size()) * kRopeTablesPerBlock;
    f.rope_table_h2d = copies * (table_bytes / (kPageableOverPinned * n.h2d_bytes_per_s(0)) + n.h2d_latency_s);
  }
  return f;
}

double dit_weight_bytes_on_host(const PublishedRecord& r) {
  const DitArchitecture& a = architecture(r.workload.model);
  // Wan2.1 checkpoints are fp32 and stay so without --convert_model_dtype (dit-architectures.md §2
  // "Weight dtype caveat"); Wan2.2's single-GPU command converts to bf16.
  const double dtype = r.workload.model.rfind("wan2.1", 0) == 0 ? 4.0 : 2.0;
  return double(a.params_total()) * dtype;
}

}  // namespace

NodeSpec published_record_node(const PublishedRecord& r, const PublishedScales& s) {
  NodeSpec n = published_node(r.gpu, r.gpu_count, r.file);
  n.gemm_efficiency = std::min(1.0, n.gemm_efficiency * s.gemm);
  n.attention_efficiency = std::min(1.0, n.attention_efficiency * s.attention);
  n.hbm_efficiency = std::min(1.0, n.hbm_efficiency * s.hbm);
  n.host_kernel_issue_s *= s.host;
  return n;
}

double text_encode_time_s(const PublishedRecord& r, const NodeSpec& n) {
  return text_encode_time_s(r.workload, n, r.text_encoder_on_cpu);
}

double vae_decode_time_s(const PublishedRecord& r, const NodeSpec& n) { return vae_decode_time_s(r.workload, n); }

PublishedPrediction predict_published(const PublishedRecord& r, const PublishedScales& scales) {
  PublishedPrediction p;
  p.id = r.id;
  p.published = r.value;
  const NodeSpec n = published_record_node(r, scales);
  if (r.measures == PublishedMeasure::h2d_bandwidth) {
    p.predicted = n.h2d_bytes_per_s(0);
    p.parts["copy_engine_h2d"] = p.predicted;
  } else if (r.measures == PublishedMeasure::peak_memory) {
    // Peak over the run's phases (model/published_memory.hpp): the parts are the peak phase's
    // resident tensors, and "phase.<name>" the total of every phase; the dominant part is named
    // "<phase>: <largest part>".
    const PeakMemoryEstimate m = published_peak_memory(r);
    const MemoryPhase& peak = m.phases[m.peak_phase];
    p.parts = peak.parts_bytes;
    for (const MemoryPhase& ph : m.phases) p.parts["phase." + ph.name] = ph.bytes();
    p.predicted = m.peak_bytes;
    p.error = (p.predicted - p.published) / p.published;
    double best = -1;
    for (const auto& [k, v] : peak.parts_bytes)
      if (v > best) {
        best = v;
        p.dominant = peak.name + ": " + k;
      }
    return p;
  } else {
    const ForwardParts f = forward_parts(r, n);
    const double gpu_s = f.gpu();
    const double host_s = (f.kernels - f.ring_kernels) * n.host_kernel_issue_s * (r.workload.compiled ? kCompiledHostFactor : 1.0) +
                          f.ring_kernels * n.host_kernel_issue_s;
    const double forward_s = std::max(gpu_s, host_s);
    p.forward_time_s = forward_s;
    p.kernels_per_forward = f.kernels;
    double mult = 1;
    switch (r.measures) {
      case PublishedMeasure::per_forward: mult = 1; break;
      case PublishedMeasure::per_step: mult = r.forwards_per_step(); break;
      case PublishedMeasure::denoise_total:
      case PublishedMeasure::generation: mult = double(r.steps) * r.forwards_per_step(); break;
      default: break;
    }
    p.parts["gemm"] = mult * f.gemm;
    p.parts["attention"] = mult * f.attention;
    p.parts["elementwise"] = mult * f.elementwise;
    p.parts["launch"] = mult * f.launch;
    p.parts["collective"] = mult * (f.collective + f.fsdp);
    p.parts["offload"] = mult * f.offload;
    p.parts["non_block"] = mult * f.non_block;
    p.parts["rope_table_h2d"] = mult * f.rope_table_h2d;
    p.parts["host_bound"] = mult * std::max(0.0, host_s - gpu_s);
    p.predicted = mult * forward_s;
    if (r.measures == PublishedMeasure::generation) {
      const double text = text_encode_time_s(r, n), vae = vae_decode_time_s(r, n);
      double swap = 0;
      if (r.offload == "whole-model-swap") {
        // The DiT (each expert) moved on and off the GPU once per generation with pageable .to().
        const double experts = double(architecture(r.workload.model).experts);
        swap = 2.0 * experts * dit_weight_bytes_on_host(r) / (kPageableOverPinned * n.h2d_bytes_per_s(0));
      }
      // HunyuanVideo's official pipeline as released (the records' revision: xfuser 0.4.0, Dec
      // 2024) builds its VAE's causal attention masks row by row on the host, on every rank
      // (hunyuan_vae_mask_loop_time_s, model/generation.hpp); the fitted decode (SGLang's port, a
      // vectorised mask) does not include it.
      const double mask_loop = r.framework == "hunyuanvideo" ? hunyuan_vae_mask_loop_time_s(r.workload) : 0.0;
      p.parts["text_encode"] = text;
      p.parts["vae_decode"] = vae;
      p.parts["vae_mask_loop"] = mask_loop;
      p.parts["model_swap"] = swap;
      p.predicted += text + vae + swap + mask_loop;
    }
  }
  p.error = (p.predicted - p.published) / p.published;
  double best = -1;
  for (const auto& [k, v] : p.parts)
    if (v > best) {
      best = v;
      p.dominant = k;
    }
  // A host-bound forward is dominated by the host, whatever its GPU parts.
  if (p.parts.count("host_bound") && p.parts["host_bound"] > 0) p.dominant = "host_issue";
  return p;
}

}  // namespace chunkflow
