// The roofline's byte and op counts (node_work.h) against hand counts for every op the graph
// has, the device roofs (device_roofs.h) and one step's kernel groups (step_roofline.h). Every
// expected value is written as the arithmetic a reader would do by hand.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "device_roofs.h"
#include "node_work.h"
#include "roofline_table.h"
#include "step_roofline.h"
#include "format/trace_load.h"
#include "trace_summary.h"

namespace minfer::trace {
namespace {

using nlohmann::json;

json node(int id, const char* name, const char* op, int64_t rows, int64_t cols, json src,
          json weight_type = nullptr, json bias = nullptr, int fused_into = -1) {
  return {{"id", id}, {"name", name}, {"op", op}, {"shape", {rows, cols}}, {"src", std::move(src)},
          {"weight_type", std::move(weight_type)}, {"bias", std::move(bias)}, {"fused_into", fused_into}};
}

// Qwen2.5-0.5B's attention shapes: 14 query heads, 2 KV heads of 64.
StepShape shape(const char* phase, int64_t pos, const char* backend = "cuda", const char* path = "mmq") {
  StepShape s;
  s.pos = pos;
  s.n_head = 14;
  s.n_head_kv = 2;
  s.head_dim = 64;
  s.backend = backend;
  s.matmul_path = path;
  s.phase = phase;
  return s;
}

// A 7-token prefill: x [7, 896] feeds every op under test.
json prefill_graph() {
  json n = json::array();
  n.push_back(node(0, "tokens", "input", 7, 1, json::array()));
  n.push_back(node(1, "token_embd", "get_rows", 7, 896, {0}, "Q4_0"));
  n.push_back(node(2, "blk.0.attn_norm", "rms_norm", 7, 896, {1}, "F32"));
  n.push_back(node(3, "blk.0.attn_k", "matmul", 7, 128, {2}, "Q8_0", "blk.0.attn_k.bias"));
  n.push_back(node(4, "blk.0.attn_k_bias", "add_bias", 7, 128, {3}, nullptr, "blk.0.attn_k.bias", 3));
  n.push_back(node(5, "blk.0.q_rope", "rope", 7, 896, {2, 0}));
  n.push_back(node(6, "blk.0.kv_store", "kv_store", 7, 256, {3, 3, 0}));
  n.push_back(node(7, "blk.0.attn", "attention", 7, 896, {5, 6, 0}));
  n.push_back(node(8, "blk.0.attn_residual", "add", 7, 896, {1, 7}));
  n.push_back(node(9, "blk.0.ffn_gate", "matmul", 7, 4864, {8}, "Q4_0"));
  n.push_back(node(10, "blk.0.ffn_silu", "silu", 7, 4864, {9}, nullptr, nullptr, 11));
  n.push_back(node(11, "blk.0.ffn_swiglu", "swiglu", 7, 4864, {9, 9}));
  n.push_back(node(12, "blk.0.ffn_down", "matmul", 7, 1024, {11}, "Q4_K"));  // 4864 = 19 blocks of 256
  n.push_back(node(13, "blk.0.silu_alone", "silu", 7, 4864, {9}));
  n.push_back(node(14, "last_row", "last_row", 1, 896, {8}));
  n.push_back(node(15, "head_in", "rms_norm", 1, 512, {14}, "F32"));
  n.push_back(node(16, "logits", "logits", 1, 1000, {15}, "Q6_K"));           // 512 = 2 blocks of 256
  n.push_back(node(17, "f16_proj", "matmul", 7, 32, {15}, "F16"));
  n.push_back(node(18, "f32_proj", "matmul", 7, 32, {15}, "F32"));
  return n;
}

NodeWork work(const json& g, size_t id, const StepShape& s) { return node_work(g, id, s); }

TEST(NodeWork, InputsDoNoWork) {
  const NodeWork w = work(prefill_graph(), 0, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 0);
  EXPECT_EQ(w.ops, 0);
}

TEST(NodeWork, GetRowsReadsOnlyTheGatheredRows) {
  // 7 rows of 896 Q4_0 elements (18 B per 32), the 7 i32 ids, 7×896 f32 written; no arithmetic
  const NodeWork w = work(prefill_graph(), 1, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 7 * (896 / 32) * 18 + 7 * 4 + 7 * 896 * 4);
  EXPECT_EQ(w.ops, 0);
}

TEST(NodeWork, RmsNorm) {
  // x read and y written (f32), the F32 weight row read; square, add, two scales per element
  const NodeWork w = work(prefill_graph(), 2, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 7 * 896 * 4 * 2 + 896 * 4);
  EXPECT_EQ(w.ops, 7 * 896 * 4);
  EXPECT_EQ(w.kind, OpsKind::F32);
}

TEST(NodeWork, Q8_0MatmulWithItsFusedBias) {
  // weight 128 rows × 896 in Q8_0 (34 B per 32), x [7,896] in, y [7,128] out, bias row;
  // 2·M·N·K for the products plus one add per output; int8 dots on the MMQ path
  const auto g = prefill_graph();
  const NodeWork w = work(g, 3, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 128 * (896 / 32) * 34 + (7 * 896 + 7 * 128) * 4 + 128 * 4);
  EXPECT_EQ(w.ops, 2.0 * 7 * 128 * 896 + 7 * 128);
  EXPECT_EQ(w.kind, OpsKind::Int8);
  // the bias node folded into it does nothing of its own
  const NodeWork folded = work(g, 4, shape("prefill", 0));
  EXPECT_EQ(folded.bytes, 0);
  EXPECT_EQ(folded.ops, 0);
}

TEST(NodeWork, Rope) {
  // x and 7 positions read, y written; 2 multiplies and an add per element
  const NodeWork w = work(prefill_graph(), 5, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 7 * 896 * 4 * 2 + 7 * 4);
  EXPECT_EQ(w.ops, 7 * 896 * 3);
}

TEST(NodeWork, HeadRmsNormAndRopeNormal) {
  // qwen3's per-head norm of q [7, 896] (14 heads of 64): x read and y written, the F32 weight
  // of one head (64 values) read; 4 ops per element as rms_norm. llama's rope_normal with
  // rope_freqs: rope's bytes plus the 32 f32 divisors; the same 3 ops per element.
  json g = prefill_graph();
  g.push_back(node(19, "blk.0.attn_q_norm", "head_rms_norm", 7, 896, {2}, "F32"));
  g.push_back(node(20, "blk.0.q_rope_normal", "rope_normal", 7, 896, {19, 0}, "F32"));
  g.back()["weight"] = "rope_freqs.weight";  // as graph_json writes a rope node with divisors
  g.push_back(node(21, "blk.0.q_rope_plain", "rope_normal", 7, 896, {19, 0}));
  const NodeWork norm = work(g, 19, shape("prefill", 0));
  EXPECT_EQ(norm.bytes, 7 * 896 * 4 * 2 + 64 * 4);
  EXPECT_EQ(norm.ops, 7 * 896 * 4);
  const NodeWork rope = work(g, 20, shape("prefill", 0));
  EXPECT_EQ(rope.bytes, 7 * 896 * 4 * 2 + 7 * 4 + 32 * 4);
  EXPECT_EQ(rope.ops, 7 * 896 * 3);
  const NodeWork plain = work(g, 21, shape("prefill", 0));
  EXPECT_EQ(plain.bytes, 7 * 896 * 4 * 2 + 7 * 4);
}

TEST(NodeWork, KvStore) {
  // k and v rows ([7, 128+128]) and 7 positions read, the same rows written to the cache
  const NodeWork w = work(prefill_graph(), 6, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 7 * 256 * 4 * 2 + 7 * 4);
  EXPECT_EQ(w.ops, 0);
}

TEST(NodeWork, AttentionInPrefillIsCausal) {
  // query i (0..6) sees i+1 keys: 1+2+..+7 = 28 (head, query, key) triples per head;
  // QK and PV: 2·64 ops each, 14 heads; q read, out written, K and V cache (7 rows × 2×64) read once
  const NodeWork w = work(prefill_graph(), 7, shape("prefill", 0));
  EXPECT_EQ(w.ops, 28.0 * 14 * (2 * 64 + 2 * 64));
  EXPECT_EQ(w.bytes, 7 * 896 * 4 * 2 + 2 * 7 * (2 * 64) * 4);
  EXPECT_EQ(w.kind, OpsKind::F16);
}

TEST(NodeWork, AttentionInDecodeReadsTheWholeCache) {
  // one query at position 17: 18 keys; the cache holds 18 rows of K and of V
  json g = json::array({node(0, "q", "rope", 1, 896, json::array()),
                        node(1, "blk.0.attn", "attention", 1, 896, {0})});
  const NodeWork w = work(g, 1, shape("decode", 17));
  EXPECT_EQ(w.ops, 18.0 * 14 * (2 * 64 + 2 * 64));
  EXPECT_EQ(w.bytes, 1 * 896 * 4 * 2 + 2 * 18 * (2 * 64) * 4);
  EXPECT_EQ(w.kind, OpsKind::F32);
}

TEST(NodeWork, ResidualAdd) {
  const NodeWork w = work(prefill_graph(), 8, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 7 * 896 * 4 * 3);
  EXPECT_EQ(w.ops, 7 * 896);
}

TEST(NodeWork, Q4_0Matmul) {
  // 4864 rows × 896 in Q4_0 (18 B per 32)
  const NodeWork w = work(prefill_graph(), 9, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 4864 * (896 / 32) * 18 + (7 * 896 + 7 * 4864) * 4);
  EXPECT_EQ(w.ops, 2.0 * 7 * 4864 * 896);
}

TEST(NodeWork, SwigluWithItsFusedSilu) {
  // gate and up read, y written; silu (exp, add, divide) and the product per element
  const auto g = prefill_graph();
  const NodeWork w = work(g, 11, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 7 * 4864 * 4 * 3);
  EXPECT_EQ(w.ops, 7 * 4864 * (3 + 1));
  const NodeWork folded = work(g, 10, shape("prefill", 0));
  EXPECT_EQ(folded.bytes + folded.ops, 0);
  const NodeWork alone = work(g, 13, shape("prefill", 0));  // an unfused silu
  EXPECT_EQ(alone.bytes, 7 * 4864 * 4 * 2);
  EXPECT_EQ(alone.ops, 7 * 4864 * 3);
}

TEST(NodeWork, Q4_KMatmul) {
  // 1024 rows × 4864 in Q4_K (144 B per 256: 19 blocks a row)
  const NodeWork w = work(prefill_graph(), 12, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 1024 * (4864 / 256) * 144 + (7 * 4864 + 7 * 1024) * 4);
  EXPECT_EQ(w.ops, 2.0 * 7 * 1024 * 4864);
}

TEST(NodeWork, LastRow) {
  const NodeWork w = work(prefill_graph(), 14, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 896 * 4 * 2);
  EXPECT_EQ(w.ops, 0);
}

TEST(NodeWork, Q6_KLogits) {
  // 1000 vocabulary rows × 512 in Q6_K (210 B per 256)
  const NodeWork w = work(prefill_graph(), 16, shape("prefill", 0));
  EXPECT_EQ(w.bytes, 1000 * (512 / 256) * 210 + (1 * 512 + 1 * 1000) * 4);
  EXPECT_EQ(w.ops, 2.0 * 1 * 1000 * 512);
}

TEST(NodeWork, FloatWeights) {
  const auto g = prefill_graph();
  const NodeWork f16 = work(g, 17, shape("prefill", 0));  // 32 rows × 512 F16 (2 B)
  EXPECT_EQ(f16.bytes, 32 * 512 * 2 + (7 * 512 + 7 * 32) * 4);
  EXPECT_EQ(f16.ops, 2.0 * 7 * 32 * 512);
  EXPECT_EQ(f16.kind, OpsKind::F16);
  const NodeWork f32 = work(g, 18, shape("prefill", 0));  // F32 (4 B)
  EXPECT_EQ(f32.bytes, 32 * 512 * 4 + (7 * 512 + 7 * 32) * 4);
  EXPECT_EQ(f32.kind, OpsKind::F32);
}

TEST(NodeWork, TheRecordedKernelDecidesThePath) {
  const auto g = prefill_graph();
  // the CUDA float path reads an f16 copy of the quantized weight: 2 B per element, f16 dots
  const json f16_kernels = {{"blk.0.ffn_gate", "cublas f16 gemm (W16 cache)"}};
  StepShape s = shape("prefill", 0, "cuda", "f16");
  s.matmul_kernels = &f16_kernels;
  const NodeWork w = work(g, 9, s);
  EXPECT_EQ(w.bytes, 4864 * 896 * 2 + (7 * 896 + 7 * 4864) * 4);
  EXPECT_EQ(w.kind, OpsKind::F16);
  // without the record the path says the same; a decode GEMV is int8 on every path
  EXPECT_EQ(work(g, 9, shape("prefill", 0, "cuda", "f16")).bytes, w.bytes);
  EXPECT_EQ(work(g, 9, shape("decode", 7, "cuda", "f16")).kind, OpsKind::Int8);
  // the CPU float path dequantizes to f32 as it goes: it reads the quantized weight
  const NodeWork cpu = work(g, 9, shape("prefill", 0, "cpu", "f32"));
  EXPECT_EQ(cpu.bytes, 4864 * (896 / 32) * 18 + (7 * 896 + 7 * 4864) * 4);
  EXPECT_EQ(cpu.kind, OpsKind::F32);
}

TEST(DeviceRoofs, TableAndBandwidth) {
  ASSERT_NE(find_device_peaks("NVIDIA H200 (sm_90, 139.8 GiB, 132 SMs, driver 13.0)"), nullptr);
  EXPECT_EQ(find_device_peaks("NVIDIA H100 PCIe")->f16_tflops, 756);
  EXPECT_EQ(find_device_peaks("NVIDIA H100 80GB HBM3")->int8_tops, 1979);
  EXPECT_EQ(find_device_peaks("AMD EPYC 9654"), nullptr);

  json meta = {{"backend", "cuda"}, {"device", "NVIDIA H200 (sm_90)"}};
  Roofs nominal = trace_roofs(meta);
  EXPECT_EQ(nominal.bandwidth_gbs, 4800);
  EXPECT_EQ(nominal.bandwidth_source, "nominal");
  EXPECT_EQ(nominal.peak_ops_per_s(OpsKind::Int8), 1979e12);
  meta["device_limits"] = {{"read_gbs", 4100.5}};
  Roofs measured = trace_roofs(meta);
  EXPECT_EQ(measured.bandwidth_gbs, 4100.5);
  EXPECT_EQ(measured.bandwidth_source, "measured");
  // a CPU or an unknown GPU: no peaks, no nominal bandwidth
  EXPECT_EQ(trace_roofs({{"backend", "cpu"}, {"device", "H200 lookalike CPU"}}).peaks, nullptr);
  EXPECT_EQ(trace_roofs({{"backend", "cuda"}, {"device", "NVIDIA B300"}}).bandwidth_gbs, 0);
}

TEST(StepRoofline, KernelsThatShareANodeAreOneGroup) {
  const json nodes = prefill_graph();
  const json meta = {{"backend", "cuda"}, {"device", "NVIDIA H200"}, {"matmul_path", "mmq"},
                     {"device_limits", {{"read_gbs", 4000}}},
                     {"model", {{"hparams", {{"n_head", 14}, {"n_head_kv", 2}, {"head_dim", 64}}}}}};
  // a fused norm+matmul kernel and the matmul's own quantize kernel: one group of nodes 2 and 3;
  // the residual add alone; a summary kernel the recorder added (node -1) is left out
  const json step = {{"phase", "prefill"}, {"pos", 0},
                     {"kernels", {{{"node", 3}, {"covers", {2, 3}}, {"duration_ns", 6000}},
                                  {{"node", 3}, {"duration_ns", 1000}},
                                  {{"node", 8}, {"duration_ns", 2000}},
                                  {{"node", -1}, {"duration_ns", 5000}}}}};
  const auto pts = step_roofline(meta, step, nodes, trace_roofs(meta));
  ASSERT_EQ(pts.size(), 2u);
  const RooflinePoint& fused = pts[0];
  EXPECT_EQ(fused.node, 3);
  EXPECT_EQ(fused.nodes, (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(fused.gpu_us, (6000 + 1000) / 1e3);
  const double bytes = (7 * 896 * 4 * 2 + 896 * 4) + (128 * (896 / 32) * 34 + (7 * 896 + 7 * 128) * 4 + 128 * 4);
  EXPECT_EQ(fused.bytes, bytes);
  EXPECT_EQ(fused.ops, 7 * 896 * 4 + (2.0 * 7 * 128 * 896 + 7 * 128));
  EXPECT_EQ(fused.kind, OpsKind::Int8);
  // bandwidth-bound: bytes / 4000 GB/s against f32 ops / 67 TFLOP/s + int8 ops / 1979 TOPS
  const double mem_us = bytes / 4000e9 * 1e6;
  EXPECT_TRUE(fused.bandwidth_bound);
  EXPECT_NEAR(fused.roof_us, mem_us, 1e-9);
  EXPECT_NEAR(fused.fraction, mem_us / 7.0, 1e-12);
  EXPECT_NEAR(fused.lost_us, 7.0 - mem_us, 1e-9);
  EXPECT_EQ(pts[1].node, 8);
  EXPECT_DOUBLE_EQ(pts[1].gpu_us, 2.0);
}

TEST(StepRoofline, UnknownDeviceHasNoFraction) {
  const json nodes = prefill_graph();
  const json meta = {{"backend", "cuda"}, {"device", "NVIDIA B300"}, {"matmul_path", "mmq"}};
  const json step = {{"phase", "prefill"}, {"pos", 0}, {"kernels", {{{"node", 8}, {"duration_ns", 2000}}}}};
  const auto pts = step_roofline(meta, step, nodes, trace_roofs(meta));
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_EQ(pts[0].bytes, 7 * 896 * 4 * 3);
  EXPECT_EQ(pts[0].fraction, -1);
  EXPECT_EQ(pts[0].roof_us, -1);
}

// The committed CUDA sample predates meta.device_limits: the summary's table says the bandwidth
// is the nominal one, and every one of its rows has a fraction.
TEST(RooflineTable, CommittedCudaSample) {
  const json t = load_trace(std::string(MINFER_SOURCE_DIR) + "/traces/qwen2.5-0.5b-q4_0-cuda-mmq.json.gz");
  const std::string s = summarize_trace(t);
  EXPECT_NE(s.find("roofline  (GPU time per kernel group"), std::string::npos) << s;
  EXPECT_NE(s.find("bandwidth 4800 GB/s (nominal"), std::string::npos) << s;
  EXPECT_NE(s.find("H200 SXM (datasheet): int8 1979 TOPS, f16 989 TFLOP/s"), std::string::npos) << s;
  EXPECT_EQ(s.find("      -        -"), std::string::npos) << "a row without a fraction:\n" << s;
  // a CPU trace has no kernel records: no table
  EXPECT_EQ(roofline_table(load_trace(std::string(MINFER_SOURCE_DIR) + "/traces/tiny-q8_0-mmq.json")), "");
}

}  // namespace
}  // namespace minfer::trace
