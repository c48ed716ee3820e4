#include "cuda/matmul_f16.h"

#include "core/error.h"
#include "cuda/convert.h"

namespace minfer::cuda {

void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) fail("cuBLAS error in ", what, ": ", cublasGetStatusString(st));
}

void matmul_float_weights(cublasHandle_t h, WeightType wt, const void* w, int64_t n_out, int64_t n_in,
                          const float* x, int64_t nt, void* x_scratch, float* y, cudaStream_t s) {
  if (n_out <= 0 || n_in <= 0 || nt <= 0) fail("matmul_f16: empty shape ", nt, "x", n_in, " . ", n_out);
  if (n_out > INT32_MAX || n_in > INT32_MAX || nt > INT32_MAX) fail("matmul_f16: shape exceeds cuBLAS's int range");
  check_cublas(cublasSetStream(h, s), "cublasSetStream");
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major Y[nt][n_out] is column-major Y^T (n_out x nt) = W (as column-major n_in x n_out,
  // transposed) times X^T (column-major n_in x nt).
  const int m = static_cast<int>(n_out), n = static_cast<int>(nt), k = static_cast<int>(n_in);
  cudaDataType_t ab;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  const void* xb = x;
  switch (wt) {
    case WeightType::F16:
      f32_to_f16(x, static_cast<__half*>(x_scratch), nt * n_in, s);
      ab = CUDA_R_16F;
      xb = x_scratch;
      break;
    case WeightType::BF16:
      f32_to_bf16(x, static_cast<__nv_bfloat16*>(x_scratch), nt * n_in, s);
      ab = CUDA_R_16BF;
      xb = x_scratch;
      break;
    case WeightType::F32:
      ab = CUDA_R_32F;
      compute = CUBLAS_COMPUTE_32F_PEDANTIC;  // no TF32: f32 models compute in f32
      break;
    default:
      fail("matmul_f16: weights of type ", name(wt), " must be dequantized to f16 first (W16 cache)");
  }
  check_cublas(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, w, ab, k, xb, ab, k, &beta, y,
                            CUDA_R_32F, m, compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx (matmul_f16)");
}

}  // namespace minfer::cuda
