// Kernel families (recorder/kernel_families.h): names as CUPTI's demangled records carry them, and
// the per-family sums minfer-bench reports.
#include <gtest/gtest.h>

#include "kernel_families.h"

using minfer::trace::kernel_family;

TEST(KernelFamilies, BaseNameWithoutNamespacesTemplatesOrParameters) {
  EXPECT_EQ(kernel_family("void minfer::cuda::(anonymous namespace)::mmvq_fused_kernel<1, 1>("
                          "minfer::cuda::(anonymous namespace)::FusedArgs)"),
            "mmvq_fused_kernel");
  EXPECT_EQ(kernel_family("void minfer::cuda::(anonymous namespace)::map_kernel<minfer::cuda::(anonymous "
                          "namespace)::AddOp>(float const*, float const*, float*, long, bool, "
                          "minfer::cuda::(anonymous namespace)::AddOp)"),
            "map_kernel");
  // Not a template: no return type in the demangled name.
  EXPECT_EQ(kernel_family("minfer::cuda::(anonymous namespace)::quantize_q8_1_kernel(float const*, long, "
                          "minfer::BlockQ8_1*)"),
            "quantize_q8_1_kernel");
  EXPECT_EQ(kernel_family("void minfer::cuda::(anonymous namespace)::mmvq_kernel<(minfer::WeightType)2, 1>("
                          "minfer::cuda::MmvqArgs)"),
            "mmvq_kernel");
  // Names that are no C++ signature (cuBLAS's, a mangled one) stay whole.
  EXPECT_EQ(kernel_family("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n"), "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n");
  EXPECT_EQ(kernel_family("_Z11rms_norm_kernelPKfS0_Pflf"), "_Z11rms_norm_kernelPKfS0_Pflf");
}

TEST(KernelFamilies, GroupsSumsAndSortsByTime) {
  auto rec = [](const std::string& name, int64_t start, int64_t dur) {
    minfer::KernelRecord k;
    k.name = name;
    k.start_ns = start;
    k.duration_ns = dur;
    return k;
  };
  const std::vector<minfer::KernelRecord> ks = {
      rec("void a::rms_norm_kernel<true>(float const*)", 1000, 2000),
      rec("void a::mmvq_kernel<(minfer::WeightType)2, 1>(Args)", 3000, 5000),
      rec("void a::mmvq_kernel<(minfer::WeightType)8, 4>(Args)", 8500, 7000),
      rec("void a::rms_norm_kernel<false>(float const*)", 16000, 1000),
  };
  const minfer::trace::KernelFamilies f = minfer::trace::kernel_families(ks);
  EXPECT_EQ(f.launches, 4);
  EXPECT_DOUBLE_EQ(f.sum_us, 15.0);
  EXPECT_DOUBLE_EQ(f.span_us, 16.0);  // 1 µs to 17 µs
  ASSERT_EQ(f.families.size(), 2u);
  EXPECT_EQ(f.families[0].name, "mmvq_kernel");
  EXPECT_EQ(f.families[0].launches, 2);
  EXPECT_DOUBLE_EQ(f.families[0].total_us, 12.0);
  EXPECT_EQ(f.families[1].name, "rms_norm_kernel");
  EXPECT_EQ(f.families[1].launches, 2);
  EXPECT_DOUBLE_EQ(f.families[1].total_us, 3.0);
  EXPECT_TRUE(minfer::trace::kernel_families({}).families.empty());
}
