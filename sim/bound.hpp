#pragma once
// A lower bound on the reported step time of a plan that no schedule of its ops can beat
// (shared/DESIGN.md "Policies"; issue 8 §1; code-review-3fa5e28.md §2.2).
//
// Step s = steps − 1 is reported: step_time = E(s) − E(s−1), E(k) the last end of a compute op of
// step k over all ranks (traces/timeline.hpp). Let r* be the rank whose step s−1 ends last, at
// E(s−1). Then:
//  (a) Critical path. r*'s step-s ops that depend, transitively, on its last compute op of step
//      s−1 (the anchor, ending at E(s−1)) start after E(s−1); each compute op runs for at least its
//      modelled time (stage_compute_time_s; calibrated slowdowns only add), each collective for at
//      least its uncontended time (its flows alone on the topology, + latency: run to completion as
//      the executor runs them, max-min rates re-solved as flows finish, a link direction at its
//      under-duplex capacity while its reverse carries one of them, which its own flows cause), each
//      copy for at least h2d_latency_s + bytes at the fastest rate its flow can have (copy engine or
//      the plan's cap, its route's narrowest capacity), one after another on its rank's copy lane
//      (lane order is a dependency). So step_time ≥ the longest dependency chain from the anchor to
//      any rank's last compute op of step s. In program order that
//      is Σ compute + Σ collectives where each collective gates the next compute op (Ulysses); ring
//      attention's K/V pass overlaps the attention (the longer branch counts), and FSDP's
//      all-gathers, which wait only for the compute two blocks back, count only where they gate.
//  (b) Links. Every collective of step s that sits between two compute ops of step s and depends on
//      the anchor (a) runs inside [E(s−1), E(s)]: it is a barrier, and r* reaches it only after
//      E(s−1). Every H2D byte of step s
//      crosses inside the window too, except what a rank can hold on the GPU before E(s−1): its copy
//      slots (slot_count · slot_bytes) and the copies read by its ops before its first collective of
//      step s (only those can run before r* arrives). So for each resource ρ of the topology (a link
//      direction or a duplex coupling) with capacity C_ρ:
//        step_time ≥ (Σ_flows coefficient · bytes − Σ_ranks coefficient · carry_r) / C_ρ.
//  (c) Copy lane. Each rank's H2D ops run one at a time, each paying h2d_latency_s and moving its
//      bytes at most at min(copy engine, its route's narrowest capacity):
//        step_time ≥ (bytes − carry_r) / rate + latency · max(0, ops − slots − ops read before the
//        first collective).
//  (d) Cumulative form of (b) and (c), for a run whose step s−1 ended at E(s−1): every byte of steps
//      0..s crosses before E(s), so step_time ≥ (those bytes on ρ) / C_ρ − E(s−1), and each rank's
//      copy lane needs Σ (latency + bytes / rate) over steps 0..s, less E(s−1). (b) is tight when the
//      buffers are small, (d) when they are deep (a 2-step run cannot hide a step's copies in the
//      first step's time when the first step needed its own).
//  (e) Release and tail form of (b). (a) gives each flow of (b) an earliest start τ_j after E(s−1)
//      (its op's chain from the anchor less its own duration; a collective's flows start when its
//      last member arrives) and a tail q_j (the longest chain from its op's end to the end of a
//      compute op of step s, all of which end by E(s)). A resource is one machine its flows share
//      at most C_ρ, so for any set J of them step_time ≥ min τ_J + Σ_J work / C_ρ + min q_J
//      (the preemptive one-machine bound with release and delivery times: Carlier 1982; Jackson's
//      preemptive schedule attains it over the sets {τ_j ≥ τ} and {q_j ≥ q}, both of which are
//      scanned). This is what sees the wrap-around: a copy that waits for a slot freed by step s's
//      own compute cannot start at E(s−1). The flows of one collective group share its release
//      and tail, so on each resource they are one item, their work summed: a set that holds some of
//      them is worth no more than the set that holds them all.
//  (f) Duplex form of (b) and (d). A direction ρ with an under-duplex capacity C_u runs at most at
//      C_u while its reverse ρ̄ carries a flow too, and its reverse then at most at C̄_u (its own
//      under-duplex capacity, or C̄ without one); otherwise at most at C and C̄ (the executor's rule,
//      Topology::apply_under_duplex). Split the window [E(s−1), E(s)] into a = the time both carry
//      flows, b = only ρ, c = only ρ̄ (disjoint, a + b + c ≤ step_time). The bytes W and W̄ that
//      must cross them inside the window ((b)'s volumes) need C_u·a + C·b ≥ W and
//      C̄_u·a + C̄·c ≥ W̄, so step_time ≥ min over a ≥ 0 of a + (W − C_u·a)⁺/C + (W̄ − C̄_u·a)⁺/C̄
//      (duplex_link_s; a linear program in a, b, c). With (d)'s totals of steps 0..s over
//      [0, E(s)], the same less E(s−1). And with (e)'s sets taken on both directions at once: the
//      flows of ρ and ρ̄ released at or after τ cross inside [τ, E(s) − their least tail], so
//      step_time ≥ τ + duplex_link_s(their bytes on ρ, on ρ̄) + least tail (and symmetrically for
//      the flows whose tail is at least q). Where a collective moves bytes both ways over a link
//      that also carries prefetch (a ring's K/V pass or an all-to-all through a shared PCIe switch
//      uplink, FSDP's all-gather on a GPU's own link), the prefetch cannot fill C beside it, which
//      (b) and (e) alone assume it can.
//  (h) The copy lane coupled with the critical chain through the executor's max-min sharing. ((g),
//      a chain–link coupling tried on 2026-11-25 on branch bound-g, was not merged: it let a copy
//      take any rate up to its cap beside a collective, and bound nothing more.) Take a rank q
//      and a resource ρ on its H2D route that no other rank's H2D route crosses. At any instant ρ
//      carries at most one copy (q's copies run one at a time, lane order) and the flows of at most
//      one collective group (every group has an op on every rank, and a rank's collectives run one
//      at a time on its lane). Progressive filling (sim/maxmin.hpp) gives every flow f at least
//      w_f · min(B_f, min over its resources r of C_r(t) / D_r), D_r ≥ Σ coefficients of the flows
//      on r at t, w_f ≤ 1 its weight (1 for copies, less for SM reads: model/routes.hpp); the capacities C_r(t) lie between C_r^lo (the under-duplex capacity where switched)
//      and C_r^hi. Let J be the step-s groups on r*'s critical chain (the longest path of (a),
//      traced back from its end) with bytes B_j > 0 on ρ, and in the window [E(s−1), E(s)] of
//      length T let h_j be the time some flow of j on ρ runs (disjoint over j), H = Σ h_j.
//      Rates, each an upper bound at every instant (D_r: q's lane where it crosses r, the other
//      ranks' lanes on r, and group j's flows; a copy of class c has flow cap c):
//        x_hi_j = min(C_ρ^hi, Σ_{k∈j on ρ} a_kρ · min(B_k, min_r C_r^hi / a_kr))   j's flows on ρ;
//        X_cj = min(x_hi_j, C_ρ^hi − a_qρ · min(c, C_ρ^hi / D_ρ, min_{r≠ρ} C_r^lo / D_r))
//          j's flows on ρ beside a class-c copy (C_ρ(t) − a_qρ · x_copy, x_copy at least its
//          guarantee; nondecreasing in C_ρ(t) since a_qρ ≤ D_ρ, so C_ρ^hi bounds it);
//        u_cj = min(v_c, (C_ρ^hi − G_j) / a_qρ), G_j = min_{k∈j on ρ} a_kρ · (k's guarantee)
//          a class-c copy beside j's flows (one of them, at least, is running);
//        v_c = min(c, min_r C_r^hi / a_qr)   a class-c copy anywhere.
//      So with p_cj = 1 − X_cj / x_hi_j, B_j ≤ x_hi_j · (h_j − o_j) + Σ_c X_cj · o_cj gives
//      h_j ≥ B_j / x_hi_j + Σ_c p_cj · o_cj, o_cj the time class-c copies flow inside h_j. Take
//      u_c = max_j u_cj and p_c = min_j p_cj. The window's copies of q (those that wait for the
//      anchor and precede a compute op of step s, as (e)'s items) are n copies, W_c bytes of class
//      c; each pays h2d_latency_s ℓ inside the window. Let m_c be the bytes class c moves inside
//      H, ω_c = m_c / u_c ≤ o_c, ℓ_in the latency inside H, H0 = Σ B_j / x_hi_j, A = Σ a'_j (j's
//      flows alone, the collective's time of (a) less its latency), σ = A − H0, and
//      X = H − H0 − Σ p_c ω_c ≥ 0. Then:
//        lane:  T ≥ H + Σ_c (W_c − m_c) / v_c + nℓ − ℓ_in = L + X − Σ_c (u_c/v_c − p_c) ω_c − ℓ_in,
//               L = H0 + nℓ + Σ_c W_c / v_c  (outside H a copy moves at most v_c, and the lane's
//               time outside H is at most T − H);
//        chain: T ≥ CP + Σ_j (h_j − a'_j) = CP − σ + X + Σ_c p_c ω_c  (the chain's ops run one
//               after another, each collective at least max(its time alone, α + h_j));
//        room:  Σ_c ω_c + ℓ_in ≤ H  ⇔  Σ_c (1 − p_c) ω_c + ℓ_in ≤ H0 + X  (the lane is serial).
//      Per second of room, the latencies save e = 1 lane second at chain cost k = 0, class c's
//      overlap saves e_c = (u_c/v_c − p_c) / (1 − p_c) ≤ 1 at k_c = p_c / (1 − p_c), at most
//      (1 − p_c)·W_c/u_c of room. For any η ≥ 0, lane + η·chain gives (1 + η)·T ≥ L + η·(CP − σ) +
//      (1 + η)·X − Σ (e − η·k)·room ≥ L + η·(CP − σ) − G(η), G(η) the most Σ (e − η·k)·room with
//      room ≤ H0 (a fractional knapsack, by value; the room beyond H0, X, is worth at most X since
//      e ≤ 1). So step_time ≥ max over η of (L + η·(CP − σ) − G(η)) / (1 + η), taken at η = 0 and
//      G's breakpoints (between them it is linear-fractional in η, so monotone); the largest over
//      the pairs (q, ρ). What it sees: an uncapped copy beside an all-to-all's flow gets only its
//      max-min share (C/2 at equal weights) and stretches it, yet the lane must spend H somewhere; (a)–(f) let a copy
//      run at full rate anywhere and a collective at its time alone at once.
// r* is unknown: bound_step_time_s = min over r* of max(a, b, c, d, e, h) computed with r*'s anchor
// (one candidate for a one-step plan; (h) is evaluated only for a candidate that may still give
// the smallest). It holds whatever the policy does (property tests draw
// random configurations and layouts and check step_time ≥ bound).
#include <string>

#include "model/node.hpp"
#include "runtime/step_plan.hpp"

namespace chunkflow {

struct RankSymmetry;  // sim/symmetry.hpp

struct StepBound {
  double bound_step_time_s = 0;    ///< max of the terms, for the r* that gives the smallest
  double critical_path_s = 0;      ///< (a)
  double link_s = 0;               ///< (b), (d), (e) or (f), the tightest resource (or direction pair)
  double link_volume_s = 0;        ///< (b) and (d) alone (bytes over capacity), the tightest resource
  std::string link_resource;       ///< its name ("pcie.gpu0.h2d", ...; "" when no bytes cross)
  double link_duplex_s = 0;        ///< (f) alone, the tightest direction pair
  double copy_lane_s = 0;          ///< (c), the tightest rank
  double chain_lane_s = 0;         ///< (h), the tightest (rank, resource) pair (0 where not evaluated)
  /// Which term binds: "critical-path", "link", "copy-lane" or "chain-lane" ((h)).
  std::string binding;
};

/// The bound of the last step of `plan` on `node` (derivation above), in seconds. With
/// `previous_step_end_s` ≥ 0 (E(s−1) of the run being bounded, seconds from its start) the
/// cumulative terms (d) are included; with a negative value, only (a)–(c), which depend on the plan
/// alone. The plan must be valid (runtime validate()). Throws std::logic_error for a plan with no
/// compute op in its last step. With `symmetry` (sim/symmetry.hpp detect_rank_symmetry of this plan
/// and node), only the representative ranks are candidates r*: every rank of an orbit has the same
/// times and its candidate the same terms, on the images of its resources, as its representative's
/// (their items are summed in their own order, so equal up to rounding: tests/test_fast_paths.cpp
/// checks 1e-9), and the ops of the other ranks take their representative's minimum durations and
/// tails (equal bit for bit; the same test compares the bound with and without the symmetry by ==).
/// The simulator passes it where it simulated the representatives alone.
StepBound step_bound(const StepPlan& plan, const NodeSpec& node, double previous_step_end_s = -1,
                     const RankSymmetry* symmetry = nullptr);

/// With `on`, this thread's step_bound takes no shortcut: it evaluates (e) on every resource for
/// every candidate r*, in resource order, as the derivation above defines it. The default skips a
/// candidate whose bound cannot fall below the best so far, and a resource whose (e) term is
/// provably below the largest term already evaluated (max release + Σ |work| / C + max tail, with a
/// 1e-9 relative margin for rounding; its items are then built and sorted only where (f) reads
/// them), which must give the same StepBound field for field (tests/test_bound.cpp checks it). For
/// tests; off by default.
void set_step_bound_exhaustive(bool on);

/// Term (f) above for one direction pair, in seconds: the least time in which `bytes` cross a
/// direction of capacity C = `capacity_bytes_per_s` (C_u = `under_duplex_bytes_per_s` while its
/// reverse carries a flow) and `reverse_bytes` cross its reverse (C̄, C̄_u likewise; a direction
/// with no under-duplex capacity passes its capacity as both), in bytes and bytes/s: min over a ≥ 0 of
/// a + max(0, (W − C_u·a)/C) + max(0, (W̄ − C̄_u·a)/C̄). Capacities C and C̄ must be > 0.
double duplex_link_s(double bytes, double reverse_bytes, double capacity_bytes_per_s, double under_duplex_bytes_per_s,
                     double reverse_capacity_bytes_per_s, double reverse_under_duplex_bytes_per_s);

}  // namespace chunkflow
