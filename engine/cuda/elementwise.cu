// Elementwise float kernels: one generic map kernel, instantiated per op.
//   add: y = a + b      mul: y = a * b      silu: y = x / (1 + e^-x)
//   swiglu: y = silu(gate) * up             add_bias: y[r][c] = x[r][c] + bias[c]
//   copy_row: y = x[row][:]
// Memory-bound: each thread moves 4 consecutive floats, as one float4 when every pointer is
// 16-byte aligned (cudaMalloc'd buffers are), so a warp reads 512 contiguous bytes per operand.
// No __restrict__: y may alias an input (in-place add of the residual stream).
#include "cuda/elementwise.h"

#include "cuda/cuda_check.h"
#include "cuda/pdl.cuh"

namespace minfer::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kPerThread = 4;

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

__device__ __forceinline__ float silu1(float v) { return v / (1.0f + expf(-v)); }  // as cpu::silu

struct AddOp {
  __device__ float operator()(float a, float b, int64_t) const { return a + b; }
};
struct MulOp {
  __device__ float operator()(float a, float b, int64_t) const { return a * b; }
};
struct SiluOp {
  __device__ float operator()(float a, float, int64_t) const { return silu1(a); }
};
struct SwigluOp {
  __device__ float operator()(float g, float u, int64_t) const { return silu1(g) * u; }
};
struct CopyOp {
  __device__ float operator()(float a, float, int64_t) const { return a; }
};
// b is the bias row; the element index picks its column.
struct BiasOp {
  const float* bias;
  int64_t cols;
  __device__ float operator()(float a, float, int64_t i) const { return a + bias[i % cols]; }
};

// Thread-to-data: global thread t owns elements [4t, 4t+4) of the flat array: one float4 per
// operand when `vec4` (all of a, b, y 16-byte aligned), else
// (and in the ragged tail of n) scalar accesses. b may be null (unary ops).
template <class Op>
__global__ void map_kernel(const float* a, const float* b, float* y, int64_t n, bool vec4, Op op) {
  pdl_wait();  // PDL: before any read or write (pdl.cuh)
  pdl_launch_dependents();
  const int64_t i0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * kPerThread;
  if (i0 >= n) return;
  if (vec4 && i0 + kPerThread <= n) {
    const float4 va = *reinterpret_cast<const float4*>(a + i0);
    const float4 vb = b ? *reinterpret_cast<const float4*>(b + i0) : va;
    float4 vy;
    vy.x = op(va.x, vb.x, i0 + 0);
    vy.y = op(va.y, vb.y, i0 + 1);
    vy.z = op(va.z, vb.z, i0 + 2);
    vy.w = op(va.w, vb.w, i0 + 3);
    *reinterpret_cast<float4*>(y + i0) = vy;
    return;
  }
  const int64_t end = i0 + kPerThread < n ? i0 + kPerThread : n;
  for (int64_t i = i0; i < end; ++i) y[i] = op(a[i], b ? b[i] : 0.0f, i);
}

template <class Op>
void launch_map(const char* kernel, const float* a, const float* b, float* y, int64_t n, Op op, cudaStream_t s) {
  if (n < 0) fail("CUDA kernel ", kernel, ": negative size ", n);
  if (n == 0) return;
  if (!a || !y) fail("CUDA kernel ", kernel, ": null pointer");
  const bool vec4 = aligned16(a) && aligned16(y) && (!b || aligned16(b));
  const unsigned grid = grid_1d((n + kPerThread - 1) / kPerThread, kThreads, kernel);
  launch_pdl(kernel, map_kernel<Op>, grid, kThreads, 0, s, a, b, y, n, vec4, op);
}

}  // namespace

void add(const float* a, const float* b, float* y, int64_t n, cudaStream_t s) {
  if (!b) fail("CUDA kernel add: null pointer");
  launch_map("add", a, b, y, n, AddOp{}, s);
}

void mul(const float* a, const float* b, float* y, int64_t n, cudaStream_t s) {
  if (!b) fail("CUDA kernel mul: null pointer");
  launch_map("mul", a, b, y, n, MulOp{}, s);
}

void silu(const float* x, float* y, int64_t n, cudaStream_t s) { launch_map("silu", x, nullptr, y, n, SiluOp{}, s); }

void swiglu(const float* gate, const float* up, float* y, int64_t n, cudaStream_t s) {
  if (!up) fail("CUDA kernel swiglu: null pointer");
  launch_map("swiglu", gate, up, y, n, SwigluOp{}, s);
}

void add_bias(const float* x, const float* bias, float* y, int64_t rows, int64_t cols, cudaStream_t s) {
  if (rows < 0 || cols < 0) fail("CUDA kernel add_bias: bad shape ", rows, " x ", cols);
  if (rows == 0 || cols == 0) return;
  if (!bias) fail("CUDA kernel add_bias: null pointer");
  // x and y move as float4 over the flat array; bias is read per element (bias[i % cols], an L1
  // hit), so neither the row width nor the bias alignment matters.
  launch_map("add_bias", x, nullptr, y, rows * cols, BiasOp{bias, cols}, s);
}

void copy_row(const float* x, int64_t row, int64_t cols, float* y, cudaStream_t s) {
  if (row < 0 || cols < 0) fail("CUDA kernel copy_row: bad row ", row, " / cols ", cols);
  if (!x) fail("CUDA kernel copy_row: null pointer");
  launch_map("copy_row", x + row * cols, nullptr, y, cols, CopyOp{}, s);
}

}  // namespace minfer::cuda
