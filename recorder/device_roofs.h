// The limits a node's achieved rate is measured against: the device's memory bandwidth (the
// streaming read measured at record time, meta.device_limits.read_gbs; else the table's nominal
// DRAM figure) and its dense tensor-core / CUDA-core peaks, from a table by device name.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "node_work.h"

namespace minfer::trace {

// Datasheet figures of one device: dense (no sparsity) peaks and the nominal DRAM bandwidth.
struct DevicePeaks {
  const char* match;   // substring of meta.device that names it ("H100 PCIe" before "H100")
  const char* label;   // what the figures are for
  double int8_tops, f16_tflops, f32_tflops, dram_gbs;
};

// nullptr for a device the table does not know (a CPU, an unlisted GPU).
const DevicePeaks* find_device_peaks(std::string_view device);

struct Roofs {
  double bandwidth_gbs = 0;        // 0: unknown
  std::string bandwidth_source;    // "measured" | "nominal" | "" (unknown)
  const DevicePeaks* peaks = nullptr;
  // Peak rate for ops of `k` in ops/s; 0 when unknown.
  double peak_ops_per_s(OpsKind k) const;
};

Roofs trace_roofs(const nlohmann::json& meta);

}  // namespace minfer::trace
