// The valid trace the mutation tests damage: a small synthetic paired run (one layer, 16 wide,
// two decode steps, small grids, a reference with `ref`/`cmp` per node and `ref_logits`/`compare`
// per step) recorded by the real recorder, plus a CUDA-style kernel record so every reader's
// kernel path is exercised too.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "recorder.h"
#include "synthetic.h"
#include "format/trace_load.h"

namespace minfer::trace::testing {

inline nlohmann::json small_valid_trace(const std::string& scratch_path) {
  RecorderOptions o;
  o.path = scratch_path;
  o.grid_rows = 4;
  o.grid_cols = 6;
  o.hist_bins = 5;
  o.top_k = 4;
  synth::Run run;
  run.shapes = synth::Shapes{1, 16, 8, 24, 40};
  run.n_decode = 2;
  run.paired = true;
  {
    Recorder rec(o, synth::paired_meta(), synth::token_text);
    synth::run(rec, run);
    rec.finish({{"load_ms", 1.0}, {"prefill_ms", 2.0}, {"decode_ms", {1.0, 1.0}}});
  }
  nlohmann::json t = load_trace(scratch_path);
  t["steps"][1]["kernels"] = nlohmann::json::array(
      {{{"name", "mmvq_q8_0"}, {"node", 3}, {"start_ns", 1200}, {"duration_ns", 800},
        {"grid", {16, 1, 1}}, {"block", {32, 4, 1}}, {"registers", 40}, {"shared_bytes", 0}}});
  return t;
}

}  // namespace minfer::trace::testing
