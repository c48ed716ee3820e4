// Live runs back to back: a client that starts the next run as soon as it reads a run's last
// event ("done" or "error") is never told that the previous run is still busy.
#include <gtest/gtest.h>

#include "viz_live_fixture.h"

namespace minfer::viz::test {
namespace {

using VizLiveRuns = VizLiveFixture;

struct Ended {
  std::string last_event;  // "done" / "error" ("" when the stream ended without one)
  int next_status = 0;     // the answer to the run started on that event
  std::string next_body;
};

// Follows run `id`'s events; on its last event starts the next run at once (another
// connection), as the page does, and stops reading.
Ended follow_and_restart(VizLiveFixture& f, int id) {
  httplib::Client events = f.client(), starter = f.client();
  Ended out;
  std::string stream;
  events.Get("/api/run/events?id=" + std::to_string(id), [&](const char* data, size_t n) {
    stream.append(data, n);
    // Event lines start a line; JSON data holds no raw newline, so these cannot be in data.
    for (const char* type : {"done", "error"})
      if (stream.find(std::string("event: ") + type + "\n") != std::string::npos) out.last_event = type;
    if (out.last_event.empty()) return true;
    auto r = f.start_run(starter);
    out.next_status = r ? r->status : -1;
    out.next_body = r ? r->body : httplib::to_string(r.error());
    return false;
  });
  return out;
}

void run_back_to_back(VizLiveFixture& f, const std::string& want_event, int runs) {
  auto cli = f.client();
  auto first = f.start_run(cli);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 202) << first->body;
  int id = json::parse(first->body)["id"].get<int>();
  for (int i = 0; i < runs; ++i) {
    Ended e = follow_and_restart(f, id);
    ASSERT_EQ(e.last_event, want_event) << "run " << id;
    ASSERT_EQ(e.next_status, 202) << "the run started on run " << id << "'s '" << e.last_event
                                  << "' event: " << e.next_body;
    id = json::parse(e.next_body)["id"].get<int>();
  }
  // The last one ends too, and its event says so.
  EXPECT_EQ(follow_and_restart(f, id).last_event, want_event);
}

TEST_F(VizLiveRuns, NextRunStartsOnTheDoneEvent) { run_back_to_back(*this, "done", 50); }

// A run that cannot save its trace ends with "error": the next one may start on that event too.
TEST_F(VizLiveRuns, NextRunStartsOnTheErrorEvent) {
  fs::remove_all(traces.path());  // the recorder has nowhere to write
  run_back_to_back(*this, "error", 50);
}

}  // namespace
}  // namespace minfer::viz::test
