#include "compiler/collective_run.h"

#include <algorithm>
#include <cstring>

#include "compiler/runtime/chunk_trace.h"
#include "engine/tensor/collectives.h"

namespace kiln::compiler {

CollectiveRun::CollectiveRun(const Program& p, const std::vector<void*>& ptrs, RunProfile* profile)
    : p_(p), ptrs_(ptrs), profile_(profile), handles_(p.collectives.size()), span_of_(p.collectives.size(), 0) {}

void CollectiveRun::before_call(size_t call) {
  for (; next_event_ < p_.events.size() && p_.events[next_event_].before_call == call; ++next_event_) {
    const CollectiveEvent& e = p_.events[next_event_];
    if (e.kind == CollectiveEvent::Kind::start)
      start(e.collective);
    else
      wait(e.collective);
  }
}

void CollectiveRun::start(size_t collective) {
  const CollectiveCall& c = p_.collectives[collective];
  const int64_t begin = profile_ ? trace_clock_ns() : 0;
  for (size_t i = 0; i < c.num_inputs; ++i) {
    const auto in = static_cast<size_t>(c.args[i]), out = static_cast<size_t>(c.args[c.num_inputs + i]);
    const ProgramBuffer& buf = p_.buffers[out];
    if (ptrs_[in] != ptrs_[out] && buf.bytes() > 0) std::memcpy(ptrs_[out], ptrs_[in], static_cast<size_t>(buf.bytes()));
    handles_[collective].push_back(collectives().start_allreduce(ptrs_[out], buf.type.numel(), buf.type.dtype));
  }
  in_flight_.push_back(collective);
  if (profile_) {
    span_of_[collective] = profile_->collectives.size();
    profile_->collectives.push_back({collective, begin, trace_clock_ns(), 0, 0, 0});
  }
}

void CollectiveRun::test_in_flight() {
  for (size_t collective : in_flight_) {
    bool done = true;
    for (int64_t h : handles_[collective]) done = collectives().test(h) && done;
    if (done && profile_ && profile_->collectives[span_of_[collective]].done_ns == 0)
      profile_->collectives[span_of_[collective]].done_ns = trace_clock_ns();
  }
}

void CollectiveRun::wait(size_t collective) {
  const int64_t begin = profile_ ? trace_clock_ns() : 0;
  for (int64_t h : handles_[collective]) collectives().wait(h);
  handles_[collective].clear();
  in_flight_.erase(std::find(in_flight_.begin(), in_flight_.end(), collective));
  if (!profile_) return;
  CollectiveSpan& span = profile_->collectives[span_of_[collective]];
  span.wait_begin_ns = begin;
  span.wait_end_ns = trace_clock_ns();
  if (span.done_ns == 0) span.done_ns = span.wait_end_ns;
}

}  // namespace kiln::compiler
