// A synthetic trace v3 of a CUDA run with CUPTI kernel records (docs: /tmp/plan/v3-spec.md,
// "#9"), built as JSON: the Qwen2-shaped graphs of synthetic.h, one to three kernels per
// executed node laid end to end with gaps, an unattributed kernel per step, a step without
// kernel records, optionally a step whose nodes interleave (A, B, A) and a step where two
// kernels of one node overlap. Every derived field is
// computed from the kernels: node gpu_us = sum of its kernels' durations, gpu_start_us = its
// first kernel's start; step gpu_ms = first start to last end, gpu_busy_ms = union of kernel
// intervals, idle_ms = the difference.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/graph_json.h"
#include "synthetic.h"

namespace minfer::synth {

struct CudaRun {
  int n_decode = 3;
  int no_kernels_step = 2;     // a step recorded without kernel records (-1: none)
  int interleaved_step = 3;    // a step whose first two matmuls interleave (-1: none)
  int overlap_step = -1;       // a step where the first matmul's second kernel starts 100 ns
                               // before its first one ends (as real H200 records show)
};

// Sum of the lengths of the union of [start, start + dur) intervals.
inline int64_t union_ns(std::vector<std::pair<int64_t, int64_t>> iv) {
  std::sort(iv.begin(), iv.end());
  int64_t total = 0, cur_a = 0, cur_b = INT64_MIN;
  for (auto [s, d] : iv) {
    if (s > cur_b) {
      if (cur_b != INT64_MIN) total += cur_b - cur_a;
      cur_a = s, cur_b = s + d;
    } else {
      cur_b = std::max(cur_b, s + d);
    }
  }
  if (cur_b != INT64_MIN) total += cur_b - cur_a;
  return total;
}

inline nlohmann::json cuda_trace(const CudaRun& r = {}) {
  using nlohmann::json;
  const Shapes shapes;
  const Graph prefill = make_graph(Phase::Prefill, 5, shapes), decode = make_graph(Phase::Decode, 1, shapes);
  json meta = synth::meta();
  meta["backend"] = "cuda";
  meta["device"] = "NVIDIA H200";
  meta["cuda_graph"] = true;
  meta["summaries"] = "device";
  meta["cupti"] = {{"enabled", true}, {"reason", nullptr}, {"steps", "0-1,3-"}, {"other_steps", "none"}};
  json steps = json::array();
  double start_ms = 2.0;
  for (int step = 0; step <= r.n_decode; ++step) {
    const Graph& g = step == 0 ? prefill : decode;
    json s = {{"index", step}, {"phase", step == 0 ? "prefill" : "decode"}, {"graph", step == 0 ? "prefill" : "decode"},
              {"pos", step == 0 ? 0 : 4 + step}, {"tokens", json::array({{{"id", 11}, {"text", ","}}})},
              {"start_ms", start_ms}, {"logits", nullptr}};
    json nodes = json::array(), kernels = json::array();
    const bool with_kernels = step != r.no_kernels_step;
    int64_t clock = 3000 + 250 * step;  // launch latency: the first kernel starts after the step
    std::vector<const Node*> executed;
    for (const Node& n : g.nodes)
      if (n.executed() && n.op != Op::Input) executed.push_back(&n);
    // The interleaved step runs kernel 1 of the first matmul, then the second matmul, then
    // kernel 2 of the first: their node spans overlap.
    std::vector<std::pair<const Node*, int>> launches;  // (node, kernel index within the node)
    for (const Node* n : executed) {
      const int count = n->op == Op::MatMul ? 2 : n->op == Op::Attention ? 3 : 1;
      for (int k = 0; k < count; ++k) launches.emplace_back(n, k);
    }
    if (step == r.interleaved_step) {
      auto first_mm = std::find_if(launches.begin(), launches.end(), [](auto& l) { return l.first->op == Op::MatMul; });
      std::rotate(first_mm + 1, first_mm + 2, first_mm + 4);  // A0 A1 B0 B1 -> A0 B0 B1 A1
    }
    std::map<int, std::vector<std::pair<int64_t, int64_t>>> per_node;
    std::vector<std::pair<int64_t, int64_t>> all;
    bool overlapped = false;
    for (auto [n, k] : launches) {
      if (step == r.overlap_step && !overlapped && n->op == Op::MatMul && k == 1) {
        clock = all.back().first + all.back().second - 100;
        overlapped = true;
      }
      const int64_t dur = 1500 + 37 * n->id + 400 * k + (n->op == Op::MatMul && k == 1 ? 6000 : 0);
      const std::string name = n->op == Op::MatMul ? (k == 0 ? "quantize_q8_1" : "mul_mat_vec_q4_0_q8_1")
                               : n->op == Op::Attention ? "attn_decode_split_" + std::to_string(k)
                                                        : std::string("k_") + op_name(n->op);
      if (with_kernels) {
        kernels.push_back({{"name", name}, {"node", n->id}, {"start_ns", clock}, {"duration_ns", dur},
                           {"grid", {n->cols() / 32 + 1, 1, 1}}, {"block", {128, 1, 1}}, {"registers", 32 + 8 * k},
                           {"shared_bytes", n->op == Op::MatMul ? 4096 : 0}, {"graph_node", static_cast<int>(kernels.size())}});
        per_node[n->id].push_back({clock, dur});
        all.push_back({clock, dur});
      }
      clock += dur + 900 + (n->id % 5) * 150;  // launch gaps
    }
    if (with_kernels) {  // the recorder's own summary kernel belongs to no node
      const int64_t dur = 2200;
      kernels.push_back({{"name", "trace_node_summaries"}, {"node", -1}, {"unattributed", "recorder: on-device node summaries"},
                         {"start_ns", clock}, {"duration_ns", dur}, {"grid", {64, 1, 1}}, {"block", {256, 1, 1}},
                         {"registers", 40}, {"shared_bytes", 1024}});
      all.push_back({clock, dur});
      clock += dur;
    }
    for (const Node& n : g.nodes) {
      json rec = {{"id", n.id}};
      if (!n.executed()) rec["no_output"] = "fused";
      else if (n.op == Op::Input) rec["no_output"] = "input";
      else if (!n.has_output) rec["no_output"] = "kv_store";
      else rec["stats"] = {{"min", -1}, {"max", 1}, {"mean", 0}, {"absmean", 0.5}, {"std", 0.6},
                           {"count", n.rows() * n.cols()}, {"nan", 0}, {"inf", 0}};
      if (auto p = per_node.find(n.id); p != per_node.end()) {
        int64_t sum = 0, first = INT64_MAX;
        for (auto [a, d] : p->second) sum += d, first = std::min(first, a);
        rec["gpu_us"] = static_cast<double>(sum) / 1e3;
        rec["gpu_start_us"] = static_cast<double>(first) / 1e3;
      }
      nodes.push_back(rec);
    }
    s["nodes"] = nodes;
    s["kernels"] = kernels;
    const double host_ms = static_cast<double>(clock + 4000) / 1e6;  // the sync after the last kernel
    s["time_ms"] = host_ms;
    s["host_ms"] = host_ms;
    if (with_kernels) {
      int64_t a = INT64_MAX, b = INT64_MIN;
      for (auto [st, d] : all) a = std::min(a, st), b = std::max(b, st + d);
      s["gpu_ms"] = static_cast<double>(b - a) / 1e6;
      s["gpu_busy_ms"] = static_cast<double>(union_ns(all)) / 1e6;
      s["idle_ms"] = static_cast<double>(b - a - union_ns(all)) / 1e6;
      s["kernels_dropped"] = step == 1 ? 3 : 0;
    } else {
      s["kernels_note"] = "cupti: not on this step (--trace-kernels 0-1,3-)";
    }
    start_ms += host_ms + 0.05;
    steps.push_back(s);
  }
  return {{"format", "minfer-trace"}, {"version", 3}, {"meta", meta},
          {"graphs", {trace::graph_to_json(prefill), trace::graph_to_json(decode)}},
          {"steps", steps}, {"complete", true}};
}

}  // namespace minfer::synth
