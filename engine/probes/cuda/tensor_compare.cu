// A tensor against its reference on the device; see tensor_compare.h for the kernels' layout.
#include "probes/cuda/tensor_compare.h"

#include <cub/block/block_reduce.cuh>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "cuda/cuda_check.h"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;

// a's and b's fields joined: sums and counts added, the larger |a-b| kept (the lower index on
// ties, so the result is compare_host's "first of equal maxima" whatever the join order).
struct Join {
  __device__ CompareSums operator()(const CompareSums& a, const CompareSums& b) const {
    CompareSums r = a;
    r.saa += b.saa;
    r.sbb += b.sbb;
    r.sab += b.sab;
    r.see += b.see;
    r.n_beyond += b.n_beyond;
    r.nonfinite += b.nonfinite;
    if (b.max_at >= 0 && (a.max_at < 0 || b.max_abs > a.max_abs || (b.max_abs == a.max_abs && b.max_at < a.max_at))) {
      r.max_abs = b.max_abs;
      r.max_at = b.max_at;
    }
    return r;
  }
};

__global__ void __launch_bounds__(kThreads)
    compare_partials_kernel(const float* __restrict__ a, const float* __restrict__ b, int64_t n, double tol_abs,
                            double tol_rel, CompareSums* __restrict__ partials) {
  using BlockReduce = cub::BlockReduce<CompareSums, kThreads>;
  __shared__ typename BlockReduce::TempStorage tmp;
  CompareSums s;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    const float fa = a[i], fb = b[i];
    const bool ia = isfinite(fa), ib = isfinite(fb);
    if (!ia || !ib) {  // the same non-finite value on both sides is equal and takes no part
      const bool same = !ia && !ib && ((isnan(fa) && isnan(fb)) || fa == fb);
      if (!same) ++s.nonfinite;
      continue;
    }
    const double x = fa, y = fb, d = x - y, ad = fabs(d);
    s.saa += x * x;
    s.sbb += y * y;
    s.sab += x * y;
    s.see += d * d;
    if (s.max_at < 0 || ad > s.max_abs) {  // this thread's indices rise: the first of equal maxima stays
      s.max_abs = ad;
      s.max_at = i;
    }
    // Rounded as the host rounds it (no fused multiply-add): an element on the edge counts alike.
    if (ad > __dadd_rn(tol_abs, __dmul_rn(tol_rel, fabs(y)))) ++s.n_beyond;
  }
  const CompareSums r = BlockReduce(tmp).Reduce(s, Join{});
  if (threadIdx.x == 0) partials[blockIdx.x] = r;
}

__global__ void __launch_bounds__(kThreads)
    compare_finish_kernel(const CompareSums* __restrict__ partials, int n_partials, CompareSums* __restrict__ out) {
  using BlockReduce = cub::BlockReduce<CompareSums, kThreads>;
  __shared__ typename BlockReduce::TempStorage tmp;
  CompareSums s;
  for (int i = threadIdx.x; i < n_partials; i += kThreads) s = Join{}(s, partials[i]);
  const CompareSums r = BlockReduce(tmp).Reduce(s, Join{});
  if (threadIdx.x == 0) *out = r;
}

struct GatherIndex {
  int64_t i[kMaxGather];
};

__global__ void gather_kernel(const float* __restrict__ x, GatherIndex idx, int k, float* __restrict__ out) {
  if (static_cast<int>(threadIdx.x) < k) out[threadIdx.x] = x[idx.i[threadIdx.x]];
}

}  // namespace

void compare_sums(const float* a, const float* b, int64_t n, const CompareTolerance& tol, CompareSums* partials,
                  CompareSums* out, cudaStream_t s) {
  if (n <= 0) fail("compare_sums: empty tensors (", n, " elements)");
  const unsigned ctas = std::min<unsigned>(grid_1d(n, kThreads, "compare_partials_kernel"), kMaxCompareCtas);
  compare_partials_kernel<<<ctas, kThreads, 0, s>>>(a, b, n, tol.abs, tol.rel, partials);
  check_launch("compare_partials_kernel", s);
  compare_finish_kernel<<<1, kThreads, 0, s>>>(partials, static_cast<int>(ctas), out);
  check_launch("compare_finish_kernel", s);
}

void gather_values(const float* x, const int64_t* idx, int k, float* out, cudaStream_t s) {
  if (k <= 0 || k > kMaxGather) fail("gather_values: ", k, " indices (1..", kMaxGather, ")");
  GatherIndex gi{};
  for (int j = 0; j < k; ++j) gi.i[j] = idx[j];
  gather_kernel<<<1, kMaxGather, 0, s>>>(x, gi, k, out);
  check_launch("gather_kernel", s);
}

DeviceComparer::DeviceComparer() {
  partials_.alloc(kMaxCompareCtas * sizeof(CompareSums), "the tensor comparison's partials");
  result_.alloc(sizeof(CompareSums), "the tensor comparison's result");
  gathered_.alloc(kMaxGather * sizeof(float), "the gathered reference values");
  CUDA_CHECK(cudaMallocHost(&host_, sizeof(CompareSums) + kMaxGather * sizeof(float)));
}

DeviceComparer::~DeviceComparer() {
  if (host_) cudaFreeHost(host_);
}

TensorCompare DeviceComparer::compare(const float* a, const float* b, int64_t n, const CompareTolerance& tol,
                                      cudaStream_t s, const std::vector<int64_t>& gather_idx,
                                      std::vector<float>* gathered) {
  compare_sums(a, b, n, tol, partials_.as<CompareSums>(), result_.as<CompareSums>(), s);
  const bool gather = !gather_idx.empty() && gathered;
  if (gather) gather_values(b, gather_idx.data(), static_cast<int>(gather_idx.size()), gathered_.as<float>(), s);
  CUDA_CHECK(cudaMemcpyAsync(host_, result_.get(), sizeof(CompareSums), cudaMemcpyDeviceToHost, s));
  float* h = reinterpret_cast<float*>(static_cast<unsigned char*>(host_) + sizeof(CompareSums));
  if (gather)
    CUDA_CHECK(cudaMemcpyAsync(h, gathered_.get(), gather_idx.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
  sync_bounded(s, "the tensor comparison");
  CompareSums r;
  std::memcpy(&r, host_, sizeof r);
  if (gather) gathered->assign(h, h + gather_idx.size());
  return compare_from_sums(r);
}

std::vector<float> DeviceComparer::gather(const float* x, const std::vector<int64_t>& idx, cudaStream_t s) {
  if (idx.empty()) return {};
  gather_values(x, idx.data(), static_cast<int>(idx.size()), gathered_.as<float>(), s);
  float* h = reinterpret_cast<float*>(static_cast<unsigned char*>(host_) + sizeof(CompareSums));
  CUDA_CHECK(cudaMemcpyAsync(h, gathered_.get(), idx.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
  sync_bounded(s, "the gathered reference values");
  return std::vector<float>(h, h + idx.size());
}

}  // namespace minfer::cuda
