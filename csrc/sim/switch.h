#pragma once
// The extended ToR switches (§6.2.1): one middle pipe per 4 ports, each a units::SwitchPipe with its
// own property cache and concatenator, timed here in switch cycles. Plain switches need nothing here:
// the network forwards their packets.
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "sim/context.h"
#include "units/switch_pipe.h"

namespace netsparse::sim {

class NetworkApi;

class Switches {
 public:
  Switches(SimContext& ctx, NetworkApi& net);
  bool extended(int64_t s) const { return pipe_[s * pipes_] != nullptr; }
  void arrive(int64_t s, uint32_t p, int64_t in_link, int64_t t);  // a packet at extended switch s
  void handle(const Event& e);  // switch_timer, pipe_done
  void drain_all(int64_t t);    // flush every pipe's concatenator (infinite delays)
  void finish();                // keep the extended pipes' counters only

 private:
  int64_t pipe_of(int64_t s, const Packet& k, int64_t in_link) const;
  void run_pipe(uint32_t pipe, uint32_t p, int64_t t);
  void out(uint32_t pipe, uint32_t p, int64_t t);
  void arm(uint32_t pipe, int64_t t);

  SimContext& ctx_;
  NetworkApi& net_;
  int64_t pipes_ = 1, ports_per_pipe_ = 1, lookup_cycles_ = 0, prs_per_cycle_ = 1;
  std::vector<std::unique_ptr<units::SwitchPipe>> pipe_;  // pipe s * pipes_ + i of switch s
  std::vector<int64_t> pipe_timer_, pipe_free_;  // pipe_free_: the next free issue slot (prs_per_cycle_ a cycle)
  std::vector<int64_t> timer_cycle_;  // the expiration (switch cycle) each armed pipe timer is for
  std::vector<int64_t> window_, window_prs_;  // per pipe: its current 1024-cycle window and PRs in it
  std::vector<std::deque<Timed>> pipe_out_;  // packets in a middle pipe, by the time it is done with them
};

}  // namespace netsparse::sim
