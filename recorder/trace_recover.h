// `minfer-trace recover`: completes the .partial file of a pipelined (CUDA) run killed before
// it finished with the steps its journal (step_journal.h) holds and the .partial lacks, so the
// file then has every step the run had ended, as a CPU run's would. The steps it adds are checked
// (schema and consistency, against the head), the result written beside and renamed over the
// .partial; the journal is then removed.
// The trace stays unfinished ("complete": false): the run did not end.
#pragma once
#include <cstddef>
#include <string>

namespace minfer::trace {

struct RecoverResult {
  std::string partial;         // the file completed
  size_t steps_in_file = 0;    // whole steps the .partial held
  size_t steps_recovered = 0;  // steps added from the journal
  std::string journal_end;     // what ended the journal's records (JournalContents::stopped)
};

// path: the trace's path or its ".partial". Throws Error naming the file and the problem (no
// journal beside, a journal that does not reach back to the file's last step, a result that
// does not validate); the files are then left as they were.
RecoverResult recover_trace(const std::string& path);

}  // namespace minfer::trace
