// The journal of a pipelined trace: "<path>.partial.journal", beside the streamed file
// (trace_file.h). A CUDA run formats its steps' JSON on worker threads after the step (~0.5 ms
// later on the H200 machine), so a kill -9 would lose the steps not yet written. Each step is
// appended here in binary (step_codec.h), a memory copy, as it is handed over (on the journal's
// thread, journal_thread.h), and each head the file will get; `minfer-trace recover`
// (trace_recover.h) formats what the .partial lacks.
// Whenever the .partial holds everything journaled so far, the records start over, so the
// journal stays a few steps long (the recorder bounds it, recorder.cpp). Layout (host byte order):
//   header:  "MINFERJ1", u64 n, then n bytes: the StepFormat and the vocabulary's token texts
//   records: {u32 magic, u32 kind, u64 epoch, i64 ordinal, u64 size, u64 check} + size bytes
// A record's bytes are written before its header (and the file header's magic after the rest of
// it), so a record a kill cut short has no valid header; a start-over bumps the epoch, so a
// reader stops at the first record of an older epoch.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/step_json.h"
#include "format/step_record.h"

namespace minfer::trace {

// Where the journal of the trace file `partial_path` ("<path>.partial") lives.
inline std::string journal_path_for(const std::string& partial_path) { return partial_path + ".journal"; }

class StepJournal {
 public:
  // Creates `path` new (a killed run's journal there is replaced, a symlink refused:
  // exclusive_file.h) and writes its header; throws Error naming it when it cannot.
  StepJournal(std::string path, const StepFormat& format, const std::vector<std::string>& vocab);
  ~StepJournal();  // closes; the file stays (a run that did not finish leaves it for recovery)
  StepJournal(const StepJournal&) = delete;
  StepJournal& operator=(const StepJournal&) = delete;

  // The next record goes where the first one went (the trace file holds all the earlier ones).
  void start_over();
  // The trace file's head as it will be written once the steps before it are.
  void append_head(int64_t steps_before, const std::string& head);
  // The trace file's step number `ordinal` (0: its first step).
  void append_step(int64_t ordinal, const StepData& d);
  // Closes and deletes the file (the trace finished).
  void remove();

  const std::string& path() const { return path_; }
  int64_t bytes_written() const { return bytes_written_; }
  // Records appended since the last start-over: what a recovery would read.
  int64_t records() const { return records_; }

 private:
  void append(uint32_t kind, int64_t ordinal, std::string_view payload);
  std::string path_;
  int fd_ = -1;
  int64_t records_start_ = 0, end_ = 0;
  uint64_t epoch_ = 0;
  int64_t bytes_written_ = 0;
  int64_t records_ = 0;
  std::vector<char> buf_;  // reused: a 0.5b decode step is ~0.4 MB
};

// A journal read back: its format and vocabulary and the records of its newest epoch, in order.
struct JournalContents {
  StepFormat format;
  std::vector<std::string> vocab;
  struct Record {
    bool is_head = false;
    int64_t ordinal = 0;   // a step's number in the trace file; a head: the steps before it
    std::string payload;   // a head's text, or an encoded step (decode_step)
  };
  std::vector<Record> records;
  // What ended the records before the file's end ("" when the file did): after a start-over the
  // rest of the file is an earlier epoch's bytes, so this is normal, not an error.
  std::string stopped;
};

// Throws Error naming `path` when it cannot be read or has no complete header.
JournalContents read_journal(const std::string& path);

}  // namespace minfer::trace
