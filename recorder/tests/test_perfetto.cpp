// export-perfetto on a synthetic CUDA trace (synthetic_cuda.h): the GPU tracks hold one slice
// per step over its kernels, one slice per node spanning exactly its kernels with every kernel
// nested inside it on the same track, unattributed kernels on their own track; every track
// nests properly (Perfetto drops or misplaces slices that overlap on one thread), parents come
// before their children in the file, and overlapping node spans go to a second lane.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

#include "perfetto_export.h"
#include "synthetic_cuda.h"

using namespace minfer;
using nlohmann::json;

namespace {

// Event times back in integer ns (the export writes µs with ns resolution).
int64_t ns(const json& v) { return std::llround(v.get<double>() * 1e3); }

struct Ev {
  size_t index;  // position in traceEvents
  int tid;
  int64_t a, b;  // [start, end) in ns
  const json* e;
};

struct Exported {
  json doc;
  std::vector<Ev> x;                    // complete events
  std::map<int, std::string> track;     // tid -> thread_name
  std::vector<Ev> on(const std::string& name_prefix) const {
    std::vector<Ev> r;
    for (const auto& ev : x)
      if (track.count(ev.tid) && track.at(ev.tid).rfind(name_prefix, 0) == 0) r.push_back(ev);
    return r;
  }
};

Exported run_export(const json& t) {
  Exported out{minfer::trace::to_perfetto(t), {}, {}};
  const json& evs = out.doc["traceEvents"];
  for (size_t i = 0; i < evs.size(); ++i) {
    const json& e = evs[i];
    if (e["ph"] == "M" && e["name"] == "thread_name") out.track[e["tid"].get<int>()] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    const int64_t a = ns(e["ts"]);
    out.x.push_back({i, e["tid"].get<int>(), a, a + ns(e["dur"]), &e});
  }
  return out;
}

// Kernels of the fixture, recomputed on the trace clock: (step, node) -> [(start, end)].
using Span = std::pair<int64_t, int64_t>;
std::map<std::pair<int, int>, std::vector<Span>> fixture_kernels(const json& t, std::vector<std::tuple<int, Span, std::string>>* loose) {
  std::map<std::pair<int, int>, std::vector<Span>> m;
  for (const auto& s : t["steps"]) {
    const int64_t base = std::llround(s["start_ms"].get<double>() * 1e6);
    for (const auto& k : s["kernels"]) {
      const Span sp{base + k["start_ns"].get<int64_t>(), base + k["start_ns"].get<int64_t>() + k["duration_ns"].get<int64_t>()};
      if (k["node"].get<int>() >= 0) m[{s["index"].get<int>(), k["node"].get<int>()}].push_back(sp);
      else if (loose) loose->emplace_back(s["index"].get<int>(), sp, k["unattributed"].get<std::string>());
    }
  }
  return m;
}

}  // namespace

TEST(PerfettoGpu, NodeSlicesSpanTheirKernelsWhichNestInside) {
  const json t = synth::cuda_trace({.n_decode = 3, .no_kernels_step = 2, .interleaved_step = -1});
  const Exported p = run_export(t);
  std::vector<std::tuple<int, Span, std::string>> loose;
  const auto want = fixture_kernels(t, &loose);
  size_t attributed = 0;
  for (auto& [_, v] : want) attributed += v.size();
  ASSERT_GT(attributed, 50u);

  const auto gpu = p.on("GPU: nodes > kernels");
  std::vector<Ev> node_slices, kernel_slices;
  for (const auto& ev : gpu) ((*ev.e)["cat"] == "kernel" ? kernel_slices : node_slices).push_back(ev);
  EXPECT_EQ(kernel_slices.size(), attributed);
  EXPECT_EQ(node_slices.size(), want.size());  // one per (step, node) with kernels

  // Each node slice spans exactly its kernels (first start .. last end), and says how many.
  std::map<std::pair<int, int>, const Ev*> by_node;
  for (const auto& ev : node_slices) {
    const std::pair<int, int> key{(*ev.e)["args"]["step"].get<int>(), (*ev.e)["args"]["node"].get<int>()};
    ASSERT_TRUE(want.count(key)) << "a node slice for step " << key.first << " node " << key.second << " without kernels";
    int64_t a = INT64_MAX, b = INT64_MIN;
    for (auto [s, e] : want.at(key)) a = std::min(a, s), b = std::max(b, e);
    EXPECT_EQ(ev.a, a);
    EXPECT_EQ(ev.b, b);
    EXPECT_EQ((*ev.e)["args"]["kernels"].get<size_t>(), want.at(key).size());
    by_node[key] = &ev;
  }
  // The node record's gpu_us is echoed, and it equals the sum of the kernels (the fixture's rule).
  for (const auto& [key, ev] : by_node) {
    int64_t sum = 0;
    for (auto [s, e] : want.at(key)) sum += e - s;
    EXPECT_NEAR((*ev->e)["args"]["gpu_us"].get<double>(), static_cast<double>(sum) / 1e3, 1e-9);
    EXPECT_NEAR((*ev->e)["args"]["kernel_us"].get<double>(), static_cast<double>(sum) / 1e3, 1e-9);
  }
  // Every kernel lies inside its own node's slice, on the same track, after it in the file.
  for (const auto& k : kernel_slices) {
    const std::pair<int, int> key{(*k.e)["args"]["step"].get<int>(), (*k.e)["args"]["node"].get<int>()};
    ASSERT_TRUE(by_node.count(key));
    const Ev& n = *by_node[key];
    EXPECT_EQ(k.tid, n.tid);
    EXPECT_LE(n.a, k.a);
    EXPECT_LE(k.b, n.b);
    EXPECT_LT(n.index, k.index) << "a kernel comes before its node slice in the file";
  }

  // Unattributed kernels: their own track, with the reason, and nowhere else.
  const auto un = p.on("GPU: unattributed kernels");
  ASSERT_EQ(un.size(), loose.size());
  ASSERT_EQ(loose.size(), 3u);  // steps 0, 1, 3 have kernels
  for (size_t i = 0; i < un.size(); ++i) {
    EXPECT_EQ(un[i].a, std::get<1>(loose[i]).first);
    EXPECT_EQ(un[i].b, std::get<1>(loose[i]).second);
    EXPECT_EQ((*un[i].e)["args"]["unattributed"], std::get<2>(loose[i]));
    EXPECT_EQ((*un[i].e)["args"]["node"], -1);
  }

  // Step slices on the GPU: first kernel start to last kernel end = the step's gpu_ms; none for
  // the step without kernel records, whose CPU slice carries the note instead.
  const auto gsteps = p.on("GPU: steps");
  ASSERT_EQ(gsteps.size(), 3u);
  for (const auto& ev : gsteps) {
    const json& s = t["steps"][(*ev.e)["args"]["step"].get<size_t>()];
    EXPECT_NE(s["index"], 2);
    const int64_t base = std::llround(s["start_ms"].get<double>() * 1e6);
    int64_t a = INT64_MAX, b = INT64_MIN;
    for (const auto& k : s["kernels"])
      a = std::min(a, base + k["start_ns"].get<int64_t>()), b = std::max(b, base + k["start_ns"].get<int64_t>() + k["duration_ns"].get<int64_t>());
    EXPECT_EQ(ev.a, a);
    EXPECT_EQ(ev.b, b);
    EXPECT_NEAR(static_cast<double>(ev.b - ev.a) / 1e6, s["gpu_ms"].get<double>(), 1e-12);
    EXPECT_EQ((*ev.e)["args"]["gpu_busy_ms"], s["gpu_busy_ms"]);
    EXPECT_EQ((*ev.e)["args"]["kernels_dropped"], s["kernels_dropped"]);
  }
  int notes = 0;
  for (const auto& ev : p.on("CPU: steps"))
    if ((*ev.e)["args"].contains("kernels_note")) {
      ++notes;
      EXPECT_EQ((*ev.e)["args"]["step"], 2);
    }
  EXPECT_EQ(notes, 1);
  EXPECT_EQ(p.doc["otherData"]["cupti"]["steps"], "0-1,3-");
  EXPECT_EQ(p.doc["otherData"]["summaries"], "device");
  // Nothing overlapped: one lane per GPU track; no host times per node: no CPU node track.
  std::set<std::string> names;
  for (const auto& [tid, n] : p.track) names.insert(n);
  EXPECT_EQ(names, (std::set<std::string>{"CPU: steps", "GPU: steps", "GPU: nodes > kernels", "GPU: unattributed kernels"}));
}

TEST(PerfettoGpu, EveryTrackNestsAndParentsComeFirst) {
  for (int variant : {0, 1, 2, 3}) {
    json t = synth::cuda_trace({.n_decode = variant == 2 ? 12 : 3, .no_kernels_step = 2, .interleaved_step = variant == 1 ? 3 : -1,
                                .overlap_step = variant == 3 ? 1 : -1});
    // Without start_ms the steps are laid end to end (past 1 ms: ends need 7 digits): the CPU
    // step slices touch, never overlap.
    if (variant == 2)
      for (auto& s : t["steps"]) s.erase("start_ms");
    const Exported p = run_export(t);
    std::map<int, std::vector<const Ev*>> per_tid;
    for (const auto& ev : p.x) per_tid[ev.tid].push_back(&ev);
    for (auto& [tid, evs] : per_tid) {
      ASSERT_TRUE(p.track.count(tid)) << "track " << tid << " has no name";
      for (size_t i = 0; i < evs.size(); ++i)
        for (size_t j = i + 1; j < evs.size(); ++j) {
          const Ev &x = *evs[i], &y = *evs[j];  // x is earlier in the file
          const bool disjoint = x.b <= y.a || y.b <= x.a;
          const bool y_in_x = x.a <= y.a && y.b <= x.b;
          EXPECT_TRUE(disjoint || y_in_x) << p.track.at(tid) << ": '" << (*x.e)["name"] << "' [" << x.a << ", " << x.b
                                          << ") and later '" << (*y.e)["name"] << "' [" << y.a << ", " << y.b
                                          << ") overlap without the earlier containing the later";
        }
    }
  }
}

TEST(PerfettoGpu, InterleavedNodesGoToASecondLane) {
  const json t = synth::cuda_trace({.n_decode = 3, .no_kernels_step = 2, .interleaved_step = 3});
  const Exported p = run_export(t);
  // Step 3 runs A0 B0 B1 A1 (A = blk.0.attn_q, B = blk.0.attn_k): A's span contains B's.
  std::map<std::string, const Ev*> nodes;
  for (const auto& ev : p.on("GPU: nodes > kernels"))
    if ((*ev.e)["cat"] != "kernel" && (*ev.e)["args"]["step"] == 3) nodes[(*ev.e)["name"]] = &ev;
  ASSERT_TRUE(nodes.count("blk.0.attn_q") && nodes.count("blk.0.attn_k"));
  const Ev &a = *nodes["blk.0.attn_q"], &b = *nodes["blk.0.attn_k"];
  EXPECT_LT(a.a, b.a);
  EXPECT_GT(a.b, b.b);
  EXPECT_NE(a.tid, b.tid) << "a node inside another node's span would read as its child";
  EXPECT_EQ(p.track.at(a.tid), "GPU: nodes > kernels");
  EXPECT_EQ(p.track.at(b.tid), "GPU: nodes > kernels (overlapping, lane 2)");
  // B's kernels went with B.
  int b_kernels = 0;
  for (const auto& ev : p.x)
    if ((*ev.e)["cat"] == "kernel" && (*ev.e)["args"]["step"] == 3 && (*ev.e)["args"]["node_name"] == "blk.0.attn_k") {
      ++b_kernels;
      EXPECT_EQ(ev.tid, b.tid);
    }
  EXPECT_EQ(b_kernels, 2);
}

TEST(PerfettoGpu, AKernelOverlappingItsNodesPreviousKernelGoesToItsOwnTrack) {
  const json t = synth::cuda_trace({.n_decode = 2, .no_kernels_step = -1, .interleaved_step = -1, .overlap_step = 1});
  const Exported p = run_export(t);
  // Step 1: blk.0.attn_q's second kernel starts 100 ns before its first ends.
  const auto over = p.on("GPU: kernels overlapping");
  ASSERT_EQ(over.size(), 1u);
  const json& k = *over[0].e;
  EXPECT_EQ(k["args"]["node_name"], "blk.0.attn_q");
  EXPECT_EQ(k["args"]["step"], 1);
  // Nothing is lost: every kernel of the trace is exported once.
  size_t kernels = 0, exported = 0;
  for (const auto& s : t["steps"]) kernels += s["kernels"].size();
  for (const auto& ev : p.x) exported += (*ev.e)["cat"] == "kernel" || (*ev.e)["cat"] == "kernel.unattributed";
  EXPECT_EQ(exported, kernels);
  // The node's slice still spans both kernels, the first nested in it.
  for (const auto& ev : p.on("GPU: nodes > kernels"))
    if ((*ev.e)["name"] == "blk.0.attn_q" && (*ev.e)["args"]["step"] == 1) {
      EXPECT_LE(ev.a, over[0].a);
      EXPECT_EQ(ev.b, over[0].b);
      EXPECT_EQ((*ev.e)["args"]["kernels"], 2);
    }
}

TEST(PerfettoGpu, CpuTraceHasNoGpuTracks) {
  json t = synth::cuda_trace({.n_decode = 2, .no_kernels_step = -1, .interleaved_step = -1});
  for (auto& s : t["steps"]) s["kernels"] = json::array();
  const Exported p = run_export(t);
  EXPECT_EQ(p.on("GPU").size(), 0u);
  for (const auto& [tid, name] : p.track) EXPECT_EQ(name.rfind("CPU", 0), 0u) << name;
  EXPECT_EQ(p.on("CPU: steps").size(), 3u);
}

TEST(PerfettoGpu, FixtureIsSelfConsistent) {
  // The fixture's own rules, checked against a plain recomputation (the tests above rely on them).
  const json t = synth::cuda_trace();
  for (const auto& s : t["steps"]) {
    if (!s.contains("gpu_ms")) {
      EXPECT_TRUE(s["kernels"].empty());
      continue;
    }
    std::vector<std::pair<int64_t, int64_t>> iv;
    int64_t a = INT64_MAX, b = INT64_MIN;
    for (const auto& k : s["kernels"]) {
      iv.push_back({k["start_ns"], k["duration_ns"]});
      a = std::min(a, k["start_ns"].get<int64_t>());
      b = std::max(b, k["start_ns"].get<int64_t>() + k["duration_ns"].get<int64_t>());
    }
    // Kernels of one stream: the busy time is the plain sum when nothing overlaps.
    int64_t sum = 0;
    for (auto [x, d] : iv) sum += d;
    EXPECT_EQ(synth::union_ns(iv), sum);
    EXPECT_EQ(synth::union_ns({{0, 10}, {5, 10}, {20, 1}}), 16);
    EXPECT_NEAR(s["gpu_ms"].get<double>(), static_cast<double>(b - a) / 1e6, 1e-12);
    EXPECT_NEAR(s["idle_ms"].get<double>(), s["gpu_ms"].get<double>() - s["gpu_busy_ms"].get<double>(), 1e-12);
    EXPECT_GT(s["idle_ms"].get<double>(), 0);
    EXPECT_LE(s["gpu_ms"].get<double>(), s["host_ms"].get<double>());
  }
}
