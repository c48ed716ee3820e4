#include "device_roofs.h"

namespace minfer::trace {

namespace {

// Dense peaks (no 2:4 sparsity) and DRAM bandwidth from NVIDIA's datasheets:
// - H200 SXM: H200 Tensor Core GPU datasheet (2024): INT8 1,979 TOPS, FP16/BF16 989 TFLOPS,
//   FP32 67 TFLOPS, HBM3e 4.8 TB/s (the datasheet's figures "with sparsity" halved).
// - H100 SXM5 / PCIe: H100 Tensor Core GPU datasheet (2023): SXM 1,979 / 989 / 67, 3.35 TB/s;
//   PCIe 1,513 / 756 / 51, 2.0 TB/s.
// - A100 80GB SXM: A100 datasheet (2021): INT8 624 TOPS, FP16 312 TFLOPS, FP32 19.5, 2,039 GB/s.
// - L40S: L40S datasheet (2023): INT8 733 TOPS, FP16 362 TFLOPS, FP32 91.6, 864 GB/s.
// - RTX 4090: Ada whitepaper (2022), appendix: INT8 660.6 TOPS, FP16 with FP32 accumulate
//   165.2 TFLOPS, FP32 82.6, 1,008 GB/s.
constexpr DevicePeaks kPeaks[] = {
    {"H200", "H200 SXM (datasheet)", 1979, 989, 67, 4800},
    {"H100 PCIe", "H100 PCIe (datasheet)", 1513, 756, 51, 2000},
    {"H100", "H100 SXM (datasheet)", 1979, 989, 67, 3350},
    {"A100", "A100 80GB SXM (datasheet)", 624, 312, 19.5, 2039},
    {"L40S", "L40S (datasheet)", 733, 362, 91.6, 864},
    {"RTX 4090", "GeForce RTX 4090 (Ada whitepaper)", 660.6, 165.2, 82.6, 1008},
};

}  // namespace

const DevicePeaks* find_device_peaks(std::string_view device) {
  for (const DevicePeaks& p : kPeaks)
    if (device.find(p.match) != std::string_view::npos) return &p;
  return nullptr;
}

double Roofs::peak_ops_per_s(OpsKind k) const {
  if (!peaks) return 0;
  switch (k) {
    case OpsKind::Int8: return peaks->int8_tops * 1e12;
    case OpsKind::F16: return peaks->f16_tflops * 1e12;
    case OpsKind::F32: return peaks->f32_tflops * 1e12;
  }
  return 0;
}

Roofs trace_roofs(const nlohmann::json& meta) {
  Roofs r;
  // Only a GPU has tensor-core peaks in the table; a CPU named like one is not matched.
  if (meta.value("backend", "") == "cuda") r.peaks = find_device_peaks(meta.value("device", ""));
  auto lim = meta.find("device_limits");
  if (lim != meta.end() && lim->is_object() && lim->contains("read_gbs") && (*lim)["read_gbs"].is_number() &&
      (*lim)["read_gbs"].get<double>() > 0) {
    r.bandwidth_gbs = (*lim)["read_gbs"].get<double>();
    r.bandwidth_source = "measured";
  } else if (r.peaks) {
    r.bandwidth_gbs = r.peaks->dram_gbs;
    r.bandwidth_source = "nominal";
  }
  return r;
}

}  // namespace minfer::trace
