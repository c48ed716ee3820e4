// The names of a trace's fields (docs/trace-format.md) that code outside the format looks up:
// the server's trace list and slices read a trace through these, so a name is spelled once in
// C++. Each group says which object of traces/schema/minfer-trace-v3.schema.json it names
// ("schema: <JSON pointer to its properties>"). scripts/check-trace-keys.cmake (ctest
// trace_keys) checks every name against that object, that `document` names every top-level
// field of the schema, and that no source of viz-server or of the recorder's readers spells a
// `document` or `step` name as a string of its own.
#pragma once

namespace minfer::trace::keys {

// The top level of a trace file.
namespace document {  // schema: /properties
inline constexpr char kFormat[] = "format";
inline constexpr char kVersion[] = "version";
inline constexpr char kComplete[] = "complete";
inline constexpr char kMeta[] = "meta";
inline constexpr char kGraphs[] = "graphs";
inline constexpr char kSteps[] = "steps";
inline constexpr char kTimings[] = "timings";
}  // namespace document

// The value of `format` in every version.
inline constexpr char kFormatName[] = "minfer-trace";

namespace meta {  // schema: /$defs/meta/properties
inline constexpr char kModel[] = "model";
inline constexpr char kBackend[] = "backend";
inline constexpr char kDevice[] = "device";
inline constexpr char kMatmulPath[] = "matmul_path";
inline constexpr char kPrompt[] = "prompt";
inline constexpr char kRecordedAt[] = "recorded_at";
inline constexpr char kMatmulKernels[] = "matmul_kernels";
inline constexpr char kTokensFrom[] = "tokens_from";
inline constexpr char kCompare[] = "compare";
}  // namespace meta

namespace model {  // schema: /$defs/meta/properties/model/properties
inline constexpr char kFile[] = "file";
inline constexpr char kName[] = "name";
inline constexpr char kArchitecture[] = "architecture";
inline constexpr char kSha256[] = "sha256";
inline constexpr char kHparams[] = "hparams";
}  // namespace model

// meta.compare of a paired trace.
namespace compare_meta {  // schema: /$defs/compare_meta/properties
inline constexpr char kPath[] = "path";
inline constexpr char kBackend[] = "backend";
inline constexpr char kLocal[] = "local";
}  // namespace compare_meta

namespace graph {  // schema: /$defs/graph/properties
inline constexpr char kId[] = "id";
inline constexpr char kPhase[] = "phase";
inline constexpr char kNTokens[] = "n_tokens";
inline constexpr char kNodes[] = "nodes";
}  // namespace graph

namespace step {  // schema: /$defs/step/properties
inline constexpr char kIndex[] = "index";
inline constexpr char kGraph[] = "graph";
inline constexpr char kPos[] = "pos";
inline constexpr char kTimeMs[] = "time_ms";
inline constexpr char kPhase[] = "phase";
inline constexpr char kTokens[] = "tokens";
inline constexpr char kNodes[] = "nodes";
inline constexpr char kLogits[] = "logits";
inline constexpr char kKernels[] = "kernels";
inline constexpr char kRefLogits[] = "ref_logits";
inline constexpr char kCompare[] = "compare";
}  // namespace step

// A step's input token.
namespace token {  // schema: /$defs/token/properties
inline constexpr char kId[] = "id";
inline constexpr char kText[] = "text";
}  // namespace token

// The values of a step's `phase` (and of a version-1 phase's `kind`).
inline constexpr char kPrefill[] = "prefill";

namespace logits {  // schema: /$defs/logits/properties
inline constexpr char kTop[] = "top";
inline constexpr char kChosen[] = "chosen";
inline constexpr char kChosenText[] = "chosen_text";
}  // namespace logits

namespace node_record {  // schema: /$defs/node_summary/properties
inline constexpr char kId[] = "id";
inline constexpr char kTimeUs[] = "time_us";
inline constexpr char kStats[] = "stats";
inline constexpr char kGrid[] = "grid";
inline constexpr char kHist[] = "hist";
}  // namespace node_record

namespace grid {  // schema: /$defs/grid/properties
inline constexpr char kValues[] = "values";
}  // namespace grid

namespace timings {  // schema: /$defs/timings/properties
inline constexpr char kLoadMs[] = "load_ms";
inline constexpr char kPrefillMs[] = "prefill_ms";
inline constexpr char kPrefillTokS[] = "prefill_tok_s";
inline constexpr char kDecodeTokS[] = "decode_tok_s";
}  // namespace timings

// Version 1, the upstream layout (docs/trace-format.md, "Version 1"; it has no schema): model,
// prompt and backend at the top level, steps inside phases.
namespace v1 {
inline constexpr char kModel[] = "model";
inline constexpr char kPrompt[] = "prompt";
inline constexpr char kBackend[] = "backend";
inline constexpr char kPhases[] = "phases";
inline constexpr char kPhaseKind[] = "kind";
inline constexpr char kPhaseGraph[] = "graph";
inline constexpr char kPhaseSteps[] = "steps";
inline constexpr char kStepToken[] = "token";  // the step's input token; null in the prefill
inline constexpr char kStepLogitsTop[] = "logits_top";
inline constexpr char kNodeValues[] = "values";
}  // namespace v1

}  // namespace minfer::trace::keys

// The readers' short names for the groups, declared here once rather than in each reader.
namespace minfer::trace {
namespace kdoc = keys::document;
namespace kmeta = keys::meta;
namespace kmodel = keys::model;
namespace kgraph = keys::graph;
namespace kstep = keys::step;
namespace ktok = keys::token;
namespace knode = keys::node_record;
}  // namespace minfer::trace
