// minfer-kernel-bench: the CUDA backend's decode matvec and prefill GEMM kernels run standalone at
// the Qwen2.5-0.5B and -7B shapes, in every weight type they take, each beside a CPU check of its
// output (in the style of llm.c's dev/cuda).
//   decode (one token): mmvq (quantized weights x Q8_1 activations), gemv_float (F16) and the fused
//     RMSNorm + gate/up + SwiGLU (mmvq_swiglu_fused) at the FFN shape: µs, GB/s of the bytes a
//     launch moves (weights + activations + outputs) and its fraction of the device's measured
//     streaming read (the backend's own probe, cuda::measure_read_bandwidth_gbs);
//   prefill (nt = 512, 128): mmq in Q4_0, Q8_0, Q4_K and Q6_K (and the wgmma tile, mmq_wgmma, and
//     the f16 GEMM dequantizing in the kernel, matmul_dequant, in all four on an sm_90
//     device: x converted to f16 in each launch, as the engine does), and the f16 path as the reference
//     point (f16 weights, what the W16 cache holds, through matmul_float_weights: x rounded to f16,
//     then cuBLAS): µs, TOPS = 2 * n_out * n_in * nt / t.
// Timing: a CUDA graph of back-to-back launches (as the decode step's graph runs them), replayed;
// µs = median over replays of the replay's time / its launches. The weights are not L2-resident:
// launch i reads copy i % copies of the matrix, identical copies together >= 4x the L2 (one copy
// when the matrix alone is larger), so a weight is read again only after >= 2x the L2 of other
// weights. Activations and outputs stay in L2, as in the engine.
// Check: a sample of output rows (every row of a small matrix; for prefill, three tokens) against
// the float64 reference computed on the CPU from the same bytes (quant_test_data.h): error =
// |gpu - ref| / sum_k |w_k x_k|; a case fails when an element exceeds the stated tolerance.
//
//   minfer-kernel-bench [--quick] [--filter SUBSTR] [--no-stream] [--no-direct] [--json]
// --quick: four weight types (Q4_0, Q8_0, Q4_K, Q6_K, and F16 for gemv_float), nt = 512, 5
// replays. --filter: only the cases whose name (kernel/model/matrix/type[/ntN]) contains SUBSTR.
// --no-stream: mmvq and the fused matvec with the kernels of before the streaming one
// (mmvq_stream.h; by default mmvq streams wherever stream_usable allows, 0.5B shapes included).
// --no-direct: Q4_0 and Q8_0 stream through the ring kernel, not the direct one (mmvq_stream.h).
// --json: the JSON document on stdout, the table on stderr. Exit: 0 every check passed, 1 error,
// 2 a check failed, 77 no usable CUDA device (the reason on stderr).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/build_stamp.h"
#include "core/engine_options.h"
#include "core/environment.h"
#include "core/error.h"
#include "core/fp16.h"
#include "core/thread_pool.h"
#include "cpu/ops.h"
#include "cuda/cuda_check.h"
#include "cuda/device_bandwidth.h"
#include "cuda/device_buffer.h"
#include "cuda/device_info.h"
#include "cuda/launch_settings.h"
#include "cuda/convert.h"
#include "cuda/matmul_dequant.h"
#include "cuda/matmul_f16.h"
#include "cuda/mmq.h"
#include "cuda/mmq_wgmma.h"
#include "cuda/mmvq.h"
#include "cuda/mmvq_fused.h"
#include "cuda/mmvq_stream.h"
#include "quant/quant.h"
#include "tests/quant_test_data.h"
#include "kernel_bench_check.h"
#include "kernel_bench_timing.h"

using namespace minfer;
using namespace minfer::kbench;
using minfer::cuda::DeviceBuffer;

namespace {

constexpr int kNoDevice = 77;
constexpr int kCheckFailed = 2;
constexpr float kEps = 1e-6f;  // Qwen2's rms_norm_eps

struct Matrix {
  const char* name;
  int64_t n_out, n_in;
};
struct ModelShapes {
  const char* name;
  std::vector<Matrix> matrices;  // attn_q_o also stands for o, attn_k_v for v, ffn_gate_up for up
};
const ModelShapes kModels[] = {
    {"0.5b",
     {{"attn_q_o", 896, 896}, {"attn_k_v", 128, 896}, {"ffn_gate_up", 4864, 896}, {"ffn_down", 896, 4864},
      {"lm_head", 151936, 896}}},
    {"7b",
     {{"attn_q_o", 3584, 3584}, {"attn_k_v", 512, 3584}, {"ffn_gate_up", 18944, 3584}, {"ffn_down", 3584, 18944},
      {"lm_head", 152064, 3584}}},
};
constexpr const char* kFfn = "ffn_gate_up";
constexpr const char* kLmHead = "lm_head";
const WeightType kPrefillTypes[] = {WeightType::Q4_0, WeightType::Q8_0, WeightType::Q4_K, WeightType::Q6_K};

uint32_t seed_of(const std::string& s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h % 1000000;
}

// random_weights (random bytes in every code field, sane f16 scales; F16: rounded normals) made in
// chunks of rows on the pool: on one thread the 7B LM head would take seconds.
std::vector<uint8_t> make_weights(WeightType t, int64_t rows, int64_t cols, uint32_t seed, ThreadPool& pool) {
  constexpr int64_t kChunk = 512;
  const size_t rb = row_bytes(t, cols);
  std::vector<uint8_t> w(rb * static_cast<size_t>(rows));
  pool.parallel_for((rows + kChunk - 1) / kChunk, 1, [&](int64_t b, int64_t e, int) {
    for (int64_t c = b; c < e; ++c) {
      const int64_t r0 = c * kChunk;
      const auto part = testing::random_weights(t, std::min(kChunk, rows - r0), cols, seed + static_cast<uint32_t>(c));
      std::memcpy(w.data() + static_cast<size_t>(r0) * rb, part.data(), part.size());
    }
  });
  return w;
}

template <class T>
DeviceBuffer upload(const std::vector<T>& h, const std::string& what) {
  DeviceBuffer b(h.size() * sizeof(T), what);
  CUDA_CHECK(cudaMemcpy(b.get(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return b;
}

std::vector<float> download(const DeviceBuffer& b, int64_t n) {
  std::vector<float> h(static_cast<size_t>(n));
  CUDA_CHECK(cudaMemcpy(h.data(), b.get(), h.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return h;
}

DeviceBuffer floats(int64_t n, const std::string& what) { return DeviceBuffer(static_cast<size_t>(n) * sizeof(float), what); }

struct Result {
  std::string name, phase, kernel, model, matrix;
  WeightType type = WeightType::F32;
  int64_t n_out = 0, n_in = 0, nt = 1;
  int copies = 0;
  Timing time;
  double weight_bytes = 0, bytes = 0;  // bytes: everything one launch reads and writes
  Check check{0, 0};
  std::vector<std::string> failed_parts;  // secondary checks that failed (fused: x_hat, swiglu)
  double f16_us = 0;                      // prefill mmq: the f16 path's time at the same shape, 0 when not run

  bool ok() const { return check.ok() && failed_parts.empty(); }
  double flops() const { return 2.0 * static_cast<double>(n_out) * static_cast<double>(n_in) * static_cast<double>(nt); }
  double gb_s() const { return bytes / (time.us_median * 1e-6) / 1e9; }
  double tops() const { return flops() / (time.us_median * 1e-6) / 1e12; }
};

class Bench {
 public:
  // mmq_tile: the MMQ launches' forced tile (CudaOptions::mmq_tile, MINFER_MMQ_TILE; 0: the rule).
  Bench(bool quick, std::string filter, FILE* table, int mmq_tile)
      : quick_(quick), filter_(std::move(filter)), table_(table), pool_(0), replays_(quick ? 5 : 30),
        mmq_tile_(mmq_tile) {
    CUDA_CHECK(cudaSetDevice(0));
    cudaDeviceProp p{};
    CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
    l2_bytes_ = static_cast<size_t>(p.l2CacheSize);
    cycle_bytes_ = 4 * l2_bytes_;
    read_gb_s_ = cuda::measure_read_bandwidth_gbs(nullptr);
    CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
    cuda::check_cublas(cublasCreate(&cublas_), "cublasCreate");
    // A fixed workspace, as the backend gives it: cuBLAS then never allocates inside a capture.
    cublas_ws_.alloc(32u << 20, "the cuBLAS workspace");
    cuda::check_cublas(cublasSetWorkspace(cublas_, cublas_ws_.get(), cublas_ws_.bytes()), "cublasSetWorkspace");
  }
  ~Bench() {
    cublasDestroy(cublas_);
    cudaStreamDestroy(s_);
  }

  void run() {
    std::fprintf(table_, "minfer-kernel-bench | %s | streaming read %.0f GB/s (cuda::measure_read_bandwidth_gbs) | "
                 "L2 %.1f MiB: weights cycled over identical copies, >= %.0f MiB (4x L2) | %d replays%s\n",
                 cuda::device_description().c_str(), read_gb_s_, l2_bytes_ / 1048576.0, cycle_bytes_ / 1048576.0,
                 replays_, quick_ ? " (--quick)" : "");
    for (const ModelShapes& m : kModels) {
      for (const Matrix& mat : m.matrices)
        for (WeightType t : decode_types()) {
          if (mat.n_in % info(t).block_elems) continue;  // K-quants: rows of whole 256-blocks only
          maybe_run(case_name(t == WeightType::F16 ? "gemv_float" : "mmvq", m, mat, t, 0),
                    [&](Result& r) { decode_matvec(r, m, mat, t); });
        }
      const Matrix& ffn = matrix(m, kFfn);
      for (WeightType t : decode_types()) {
        if (!is_quantized(t) || ffn.n_in % info(t).block_elems) continue;
        maybe_run(case_name("mmvq_swiglu_fused", m, ffn, t, 0), [&](Result& r) { decode_swiglu(r, m, ffn, t); });
      }
    }
    for (const ModelShapes& m : kModels)
      for (int64_t nt : quick_ ? std::vector<int64_t>{512} : std::vector<int64_t>{512, 128})
        for (const Matrix& mat : m.matrices) {
          if (std::string(mat.name) == kLmHead) continue;  // prefill computes the logits of one row
          const std::string f16 = case_name("f16_gemm", m, mat, WeightType::F16, nt);
          maybe_run(f16, [&](Result& r) { prefill_f16(r, m, mat, nt); });
          for (WeightType t : kPrefillTypes) {
            if (mat.n_in % info(t).block_elems) continue;
            maybe_run(case_name("mmq", m, mat, t, nt), [&](Result& r) {
              prefill_mmq(r, m, mat, t, nt, false);
              if (const Result* f = find(f16)) r.f16_us = f->time.us_median;
            });
            // The wgmma tile (mmq_wgmma.h), which mmq() does not take: where it applies.
            if (cuda::mmq_wgmma_applies(t, mat.n_in, nullptr, nullptr))
              maybe_run(case_name("mmq_wgmma", m, mat, t, nt), [&](Result& r) {
                prefill_mmq(r, m, mat, t, nt, true);
                if (const Result* f = find(f16)) r.f16_us = f->time.us_median;
              });
            if (cuda::matmul_dequant_applies(t, mat.n_in, nullptr))
              maybe_run(case_name("matmul_dequant", m, mat, t, nt), [&](Result& r) {
                prefill_dequant(r, m, mat, t, nt);
                if (const Result* f = find(f16)) r.f16_us = f->time.us_median;
              });
          }
        }
    if (results_.empty()) fail("--filter '", filter_, "' matches no case");
    std::fprintf(table_, "%zu cases: %d passed, %d failed\n", results_.size(), passed(), failed());
  }

  int failed() const { return static_cast<int>(results_.size()) - passed(); }

  nlohmann::json to_json() const {
    nlohmann::json cases = nlohmann::json::array();
    for (const Result& r : results_) {
      nlohmann::json c = {{"name", r.name}, {"phase", r.phase}, {"kernel", r.kernel}, {"model", r.model},
                          {"matrix", r.matrix}, {"type", name(r.type)}, {"n_out", r.n_out}, {"n_in", r.n_in},
                          {"nt", r.nt}, {"us_median", r.time.us_median}, {"us_min", r.time.us_min},
                          {"launches_per_replay", r.time.launches}, {"replays", r.time.replays},
                          {"weight_copies", r.copies}, {"weight_bytes", r.weight_bytes},
                          {"bytes_per_launch", r.bytes}};
      if (r.phase == "decode") {
        c["gb_s"] = r.gb_s();
        c["fraction_of_read"] = r.gb_s() / read_gb_s_;
      } else {
        c["tops"] = r.tops();
        if (r.f16_us > 0) c["speedup_vs_f16"] = r.f16_us / r.time.us_median;  // the f16 path's us / this us
      }
      c["check"] = {{"max_err", r.check.max_err}, {"tol", r.check.tol}, {"elements", r.check.elements},
                    {"failed_parts", r.failed_parts}, {"ok", r.ok()}};
      cases.push_back(c);
    }
    return {{"tool", "minfer-kernel-bench"}, {"minfer_version", MINFER_VERSION}, {"commit", MINFER_GIT_COMMIT},
            {"device", cuda::device_description()}, {"read_gb_s", read_gb_s_},
            {"read_probe", "cuda::measure_read_bandwidth_gbs: 512 MiB device-to-device copies, bytes read + written"},
            {"l2_bytes", l2_bytes_}, {"cycle_bytes", cycle_bytes_}, {"quick", quick_}, {"filter", filter_},
            {"timing", "a CUDA graph of back-to-back launches cycling over the weight copies, replayed; "
                       "us = median over replays of replay time / launches"},
            {"check", "max_err = max |gpu - float64 reference| / sum_k |w_k x_k| over the checked elements"},
            {"cases", cases}, {"passed", passed()}, {"failed", failed()}};
  }

 private:
  bool quick_;
  std::string filter_;
  FILE* table_;
  ThreadPool pool_;
  int replays_;
  int mmq_tile_ = 0;
  size_t l2_bytes_ = 0, cycle_bytes_ = 0;
  double read_gb_s_ = 0;
  cudaStream_t s_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceBuffer cublas_ws_;
  std::vector<Result> results_;
  bool printed_decode_header_ = false, printed_prefill_header_ = false;

  std::vector<WeightType> decode_types() const {
    if (quick_) return {WeightType::Q4_0, WeightType::Q8_0, WeightType::Q4_K, WeightType::Q6_K, WeightType::F16};
    std::vector<WeightType> v(std::begin(testing::kQuantTypes), std::end(testing::kQuantTypes));
    v.push_back(WeightType::F16);
    return v;
  }
  static const Matrix& matrix(const ModelShapes& m, const char* name) {
    for (const Matrix& x : m.matrices)
      if (std::string(x.name) == name) return x;
    fail("no matrix ", name, " in ", m.name);
  }
  static std::string case_name(const char* kernel, const ModelShapes& m, const Matrix& mat, WeightType t, int64_t nt) {
    std::string n = std::string(kernel) + "/" + m.name + "/" + mat.name + "/" + name(t);
    return nt ? n + "/nt" + std::to_string(nt) : n;
  }
  const Result* find(const std::string& name) const {
    for (const Result& r : results_)
      if (r.name == name) return &r;
    return nullptr;
  }
  int passed() const {
    return static_cast<int>(std::count_if(results_.begin(), results_.end(), [](const Result& r) { return r.ok(); }));
  }

  void maybe_run(const std::string& name, const std::function<void(Result&)>& body) {
    if (name.find(filter_) == std::string::npos) return;
    Result r;
    r.name = name;
    try {
      body(r);
    } catch (const std::exception& e) {
      fail(name, ": ", e.what());
    }
    print(r);
    results_.push_back(std::move(r));
  }

  void fill(Result& r, const char* phase, const char* kernel, const ModelShapes& m, const Matrix& mat, WeightType t,
            int64_t nt) const {
    r.phase = phase;
    r.kernel = kernel;
    r.model = m.name;
    r.matrix = mat.name;
    r.type = t;
    r.n_out = mat.n_out;
    r.n_in = mat.n_in;
    r.nt = nt;
  }

  // One eager launch on the last copy (so the copies are checked too; it also does any lazy
  // set-up of the launcher outside the capture), its outputs poisoned with NaN first so an element
  // it did not write fails. It waits for the set-up's copies first: s_ does not synchronise with
  // the legacy stream they ran on.
  void launch_once(const std::function<void(int)>& launch, const WeightCopies& wc,
                   std::initializer_list<DeviceBuffer*> outs) {
    CUDA_CHECK(cudaDeviceSynchronize());
    for (DeviceBuffer* b : outs) CUDA_CHECK(cudaMemsetAsync(b->get(), 0xFF, b->bytes(), s_));
    launch(wc.copies() - 1);
    cuda::sync_bounded(s_, "the checked launch");
  }

  void decode_matvec(Result& r, const ModelShapes& m, const Matrix& mat, WeightType t) {
    const bool f16 = t == WeightType::F16;
    fill(r, "decode", f16 ? "gemv_float" : "mmvq", m, mat, t, 1);
    const int64_t n_out = mat.n_out, n_in = mat.n_in;
    const uint32_t seed = seed_of(r.name);
    const auto w = make_weights(t, n_out, n_in, seed, pool_);
    const auto x = testing::random_floats(static_cast<size_t>(n_in), seed + 1);
    const auto xq = testing::quantize_q8_1_host(x, 1, n_in);
    const WeightCopies wc(w, cycle_bytes_, r.name);
    const DeviceBuffer dx = f16 ? upload(x, "x") : upload(xq, "x (Q8_1)");
    DeviceBuffer dy = floats(n_out, "y");
    const auto launch = [&](int i) {
      if (f16) cuda::gemv_float(t, wc.copy(i), n_out, n_in, dx.as<float>(), nullptr, dy.as<float>(), s_);
      else cuda::mmvq(t, wc.copy(i), n_out, n_in, dx.get(), nullptr, dy.as<float>(), s_);
    };
    launch_once(launch, wc, {&dy});
    const auto got = download(dy, n_out);
    r.check = matvec_check();
    compare_rows(r.check, got, n_out, n_in, {0}, [&](int64_t r0, int64_t r1) {
      return f16 ? f16_rows_reference(w, n_in, r0, r1, x, 1) : q8_rows_reference(t, w, n_in, r0, r1, xq, 1);
    });
    r.time = time_launches(s_, wc.copies(), replays_, launch);
    r.copies = wc.copies();
    r.weight_bytes = static_cast<double>(w.size());
    r.bytes = r.weight_bytes + static_cast<double>(dx.bytes()) + 4.0 * n_out;
  }

  void decode_swiglu(Result& r, const ModelShapes& m, const Matrix& ffn, WeightType t) {
    fill(r, "decode", "mmvq_swiglu_fused", m, ffn, t, 1);
    const int64_t n_out = ffn.n_out, n_in = ffn.n_in;
    const uint32_t seed = seed_of(r.name);
    const auto gate = make_weights(t, n_out, n_in, seed, pool_);
    const auto up = make_weights(t, n_out, n_in, seed + 7919, pool_);
    // One copy = gate, then up at the next aligned offset.
    const size_t up_off = align_up(gate.size());
    std::vector<uint8_t> unit(up_off + up.size());
    std::memcpy(unit.data(), gate.data(), gate.size());
    std::memcpy(unit.data() + up_off, up.data(), up.size());
    const auto x = testing::random_floats(static_cast<size_t>(n_in), seed + 1);
    const auto norm_w = testing::random_floats(static_cast<size_t>(n_in), seed + 2, 0.7f);
    const WeightCopies wc(unit, cycle_bytes_, r.name);
    const DeviceBuffer dx = upload(x, "x"), dnorm = upload(norm_w, "norm weight");
    DeviceBuffer dxh = floats(n_in, "x_hat"), dgate = floats(n_out, "gate"),
                 dup = floats(n_out, "up"), dy = floats(n_out, "y");
    const auto launch = [&](int i) {
      cuda::mmvq_swiglu_fused(dx.as<float>(), n_in, dnorm.as<float>(), kEps, dxh.as<float>(), t, wc.copy(i),
                              wc.copy(i) + up_off, n_out, dgate.as<float>(), dup.as<float>(), dy.as<float>(), s_);
    };
    launch_once(launch, wc, {&dxh, &dgate, &dup, &dy});
    const auto xh = download(dxh, n_in), g = download(dgate, n_out), u = download(dup, n_out), y = download(dy, n_out);

    // x_hat against the CPU's rms_norm; gate and up against the float64 reference of the Q8_1
    // quantization of the GPU's own x_hat (bit-exact on both sides, so no rounding flip enters);
    // y against the CPU's swiglu of the GPU's gate and up.
    std::vector<float> xh_cpu(static_cast<size_t>(n_in)), y_cpu(static_cast<size_t>(n_out));
    cpu::rms_norm(x.data(), norm_w.data(), xh_cpu.data(), 1, n_in, kEps, pool_);
    Check cx = elementwise_check(), cy = elementwise_check();
    for (int64_t k = 0; k < n_in; ++k) cx.add(xh[k], xh_cpu[k], std::fabs(xh_cpu[k]));
    cpu::swiglu(g.data(), u.data(), y_cpu.data(), n_out);
    for (int64_t o = 0; o < n_out; ++o) cy.add(y[o], y_cpu[o], std::fabs(y_cpu[o]));
    const auto xq = testing::quantize_q8_1_host(xh, 1, n_in);
    r.check = matvec_check();
    for (const auto& [w, out] : {std::pair{&gate, &g}, std::pair{&up, &u}})
      compare_rows(r.check, *out, n_out, n_in, {0},
                   [&](int64_t r0, int64_t r1) { return q8_rows_reference(t, *w, n_in, r0, r1, xq, 1); });
    if (!cx.ok()) r.failed_parts.push_back("x_hat vs rms_norm");
    if (!cy.ok()) r.failed_parts.push_back("y vs swiglu");

    r.time = time_launches(s_, wc.copies(), replays_, launch);
    r.copies = wc.copies();
    r.weight_bytes = static_cast<double>(gate.size() + up.size());
    r.bytes = r.weight_bytes + 4.0 * (3 * n_in + 3 * n_out);  // x, norm, x_hat; gate, up, y
  }

  // The tokens a prefill check reads: first, middle, last.
  static std::vector<int64_t> checked_tokens(int64_t nt) { return {0, nt / 2, nt - 1}; }
  // Those tokens' rows of x ([nt][n_in]) rounded to f16 as the f16 launchers do (round to nearest
  // even, exact on both sides): what the f16 GEMMs' references multiply.
  static std::vector<float> f16_token_rows(const std::vector<float>& x, int64_t n_in,
                                           const std::vector<int64_t>& tokens) {
    std::vector<float> x16;
    for (int64_t tk : tokens)
      for (int64_t k = 0; k < n_in; ++k) x16.push_back(fp16_to_f32(f32_to_fp16(x[tk * n_in + k])));
    return x16;
  }

  void prefill_mmq(Result& r, const ModelShapes& m, const Matrix& mat, WeightType t, int64_t nt, bool wgmma) {
    fill(r, "prefill", wgmma ? "mmq_wgmma" : "mmq", m, mat, t, nt);
    const int64_t n_out = mat.n_out, n_in = mat.n_in;
    const uint32_t seed = seed_of(r.name);
    const auto w = make_weights(t, n_out, n_in, seed, pool_);
    const auto x = testing::random_floats(static_cast<size_t>(nt * n_in), seed + 1);
    const auto xq = testing::quantize_q8_1_host(x, nt, n_in);
    const WeightCopies wc(w, cycle_bytes_, r.name);
    const DeviceBuffer dxq = upload(xq, "x (Q8_1)");
    DeviceBuffer dy = floats(nt * n_out, "y");
    const auto launch = [&](int i) {
      if (wgmma) cuda::mmq_wgmma(t, wc.copy(i), n_out, n_in, dxq.get(), nt, nullptr, dy.as<float>(), s_);
      else cuda::mmq_with_tile(t, wc.copy(i), n_out, n_in, dxq.get(), nt, nullptr, dy.as<float>(), mmq_tile_, s_);
    };
    launch_once(launch, wc, {&dy});
    const auto got = download(dy, nt * n_out);
    const auto tokens = checked_tokens(nt);
    const auto xq_t = token_rows(xq, n_in, tokens);
    r.check = matvec_check();
    compare_rows(r.check, got, n_out, n_in, tokens, [&](int64_t r0, int64_t r1) {
      return q8_rows_reference(t, w, n_in, r0, r1, xq_t, static_cast<int64_t>(tokens.size()));
    });
    r.time = time_launches(s_, wc.copies(), replays_, launch);
    r.copies = wc.copies();
    r.weight_bytes = static_cast<double>(w.size());
    r.bytes = r.weight_bytes + static_cast<double>(xq.size()) + 4.0 * nt * n_out;
  }

  // matmul_dequant: the f16 path's maths on the quantized weights (f32 -> f16 conversion of x
  // included, as in the engine); checked against the float64 dot of the f16-rounded operands.
  void prefill_dequant(Result& r, const ModelShapes& m, const Matrix& mat, WeightType t, int64_t nt) {
    fill(r, "prefill", "matmul_dequant", m, mat, t, nt);
    const int64_t n_out = mat.n_out, n_in = mat.n_in;
    const uint32_t seed = seed_of(r.name);
    const auto w = make_weights(t, n_out, n_in, seed, pool_);
    const auto x = testing::random_floats(static_cast<size_t>(nt * n_in), seed + 1);
    const WeightCopies wc(w, cycle_bytes_, r.name);
    const DeviceBuffer dx = upload(x, "x");
    const DeviceBuffer xh(static_cast<size_t>(nt * n_in) * 2, "x (f16)");
    DeviceBuffer dy = floats(nt * n_out, "y");
    const auto launch = [&](int i) {
      cuda::f32_to_f16(dx.as<float>(), xh.as<__half>(), nt * n_in, s_);
      cuda::matmul_dequant(t, wc.copy(i), n_out, n_in, xh.as<__half>(), nt, nullptr, dy.as<float>(), s_);
    };
    launch_once(launch, wc, {&dy});
    const auto got = download(dy, nt * n_out);
    const auto tokens = checked_tokens(nt);
    const auto x16 = f16_token_rows(x, n_in, tokens);
    const auto wd = testing::dequantize_rows(t, w, n_out, n_in);  // as f16 bits: the W16 cache's values
    std::vector<uint8_t> w16(wd.size() * 2);
    quantize_row(WeightType::F16, wd.data(), w16.data(), static_cast<int64_t>(wd.size()));
    r.check = f16_gemm_check();
    compare_rows(r.check, got, n_out, n_in, tokens, [&](int64_t r0, int64_t r1) {
      return f16_rows_reference(w16, n_in, r0, r1, x16, static_cast<int64_t>(tokens.size()));
    });
    r.time = time_launches(s_, wc.copies(), replays_, launch);
    r.copies = wc.copies();
    r.weight_bytes = static_cast<double>(w.size());
    r.bytes = r.weight_bytes + 4.0 * nt * (n_in + n_out) + 2.0 * nt * n_in;
  }

  void prefill_f16(Result& r, const ModelShapes& m, const Matrix& mat, int64_t nt) {
    fill(r, "prefill", "f16_gemm", m, mat, WeightType::F16, nt);
    const int64_t n_out = mat.n_out, n_in = mat.n_in;
    const uint32_t seed = seed_of(r.name);
    const auto w = make_weights(WeightType::F16, n_out, n_in, seed, pool_);
    const auto x = testing::random_floats(static_cast<size_t>(nt * n_in), seed + 1);
    const WeightCopies wc(w, cycle_bytes_, r.name);
    const DeviceBuffer dx = upload(x, "x");
    const DeviceBuffer scratch(static_cast<size_t>(nt * n_in) * 2, "x (f16)");
    DeviceBuffer dy = floats(nt * n_out, "y");
    const auto launch = [&](int i) {
      cuda::matmul_float_weights(cublas_, WeightType::F16, wc.copy(i), n_out, n_in, dx.as<float>(), nt, scratch.get(),
                                 dy.as<float>(), s_);
    };
    launch_once(launch, wc, {&dy});
    const auto got = download(dy, nt * n_out);
    const auto tokens = checked_tokens(nt);
    const auto x16 = f16_token_rows(x, n_in, tokens);
    r.check = f16_gemm_check();
    compare_rows(r.check, got, n_out, n_in, tokens, [&](int64_t r0, int64_t r1) {
      return f16_rows_reference(w, n_in, r0, r1, x16, static_cast<int64_t>(tokens.size()));
    });
    r.time = time_launches(s_, wc.copies(), replays_, launch);
    r.copies = wc.copies();
    r.weight_bytes = static_cast<double>(w.size());
    r.bytes = r.weight_bytes + 4.0 * nt * (n_in + n_out) + 2.0 * nt * n_in;
  }

  void print(const Result& r) {
    const std::string verdict = r.ok() ? "ok" : "FAIL";
    std::string parts;
    for (const std::string& p : r.failed_parts) parts += " (" + p + " failed)";
    const std::string shape = std::to_string(r.n_out) + "x" + std::to_string(r.n_in);
    if (r.phase == "decode") {
      if (!printed_decode_header_) {
        std::fprintf(table_, "decode, one token: us = median over replays; GB/s of weights + activations + outputs; "
                     "%% of the streaming read\n%-42s %-12s %8s %9s %8s %6s %9s %7s %s\n", "case", "n_out x n_in",
                     "MB", "us", "GB/s", "read", "max err", "tol", "check");
        printed_decode_header_ = true;
      }
      std::fprintf(table_, "%-42s %-12s %8.2f %9.2f %8.1f %5.1f%% %9.2e %7.0e %s%s\n", r.name.c_str(), shape.c_str(),
                   r.bytes / 1e6, r.time.us_median, r.gb_s(), 100.0 * r.gb_s() / read_gb_s_, r.check.max_err,
                   r.check.tol, verdict.c_str(), parts.c_str());
    } else {
      if (!printed_prefill_header_) {
        std::fprintf(table_, "prefill: us = median over replays; TOPS = 2 n_out n_in nt / t; vs f16 = the f16 path's "
                     "time / this time\n%-42s %-12s %5s %9s %7s %7s %9s %7s %s\n", "case", "n_out x n_in", "nt", "us",
                     "TOPS", "vs f16", "max err", "tol", "check");
        printed_prefill_header_ = true;
      }
      char vs[16] = "-";
      if (r.f16_us > 0) std::snprintf(vs, sizeof vs, "%.2f", r.f16_us / r.time.us_median);
      std::fprintf(table_, "%-42s %-12s %5lld %9.2f %7.1f %7s %9.2e %7.0e %s%s\n", r.name.c_str(), shape.c_str(),
                   static_cast<long long>(r.nt), r.time.us_median, r.tops(), vs, r.check.max_err, r.check.tol,
                   verdict.c_str(), parts.c_str());
    }
    std::fflush(table_);
  }
};

}  // namespace

int main(int argc, char** argv) {
  try {
    bool quick = false, json = false, stream = true, direct = true;
    std::string filter;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--quick") quick = true;
      else if (a == "--json") json = true;
      else if (a == "--no-stream") stream = false;
      else if (a == "--no-direct") direct = false;
      else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
      else fail("usage: minfer-kernel-bench [--quick] [--filter SUBSTR] [--no-stream] [--no-direct] [--json] (unknown or incomplete option '", a, "')");
    }
    // The environment, read once: PDL, launch sync and the wait bound for every launch
    // (MINFER_PDL, MINFER_CUDA_SYNC, MINFER_CUDA_TIMEOUT_S) and MINFER_MMQ_TILE; the streaming
    // matvec switches come from the flags.
    const EngineOptions engine = EngineOptions::from_env(process_environment());
    cuda::apply_launch_settings(engine.cuda);
    cuda::set_stream_enabled(stream);
    cuda::set_direct_enabled(direct);
    std::string why;
    if (!cuda::device_usable(&why)) {
      std::fprintf(stderr, "minfer-kernel-bench: no CUDA device: %s\n", why.c_str());
      return kNoDevice;
    }
    Bench bench(quick, filter, json ? stderr : stdout, engine.cuda.mmq_tile);
    bench.run();
    if (json) std::printf("%s\n", bench.to_json().dump(2).c_str());
    return bench.failed() ? kCheckFailed : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minfer-kernel-bench: error: %s\n", e.what());
    return 1;
  }
}
