#pragma once
// stats=links: per directed link and time bin, how long the link was busy serialising, what it
// carried, and its egress queue (packets waiting for the link; a switch port's queue is that of its
// outgoing link), as SST's per-component statistics give them. The packet network reports three
// things: a packet joins or leaves a link's queue, and a packet's serialisation [t0, t1). Bins have a
// fixed width, or (automatic) start at 1 ns and double, merging neighbours, whenever the run outgrows
// kMaxBins, so a run of any length ends with kMaxBins / 2 to kMaxBins bins. Only with the option:
// without it the network holds no LinkStats and pays one null check per hook.
#include <cstdint>
#include <functional>
#include <vector>

namespace netsparse::sim {

// What a run records beside its report (neither changes a modeled number).
struct Observe {
  bool log_hops = false;                // SimResult::hops (tests)
  int64_t link_stats_bin_ps = 0;        // kLinkStatsOff, kLinkStatsAuto, or a fixed bin width (ps)
  // Called every progress_events events with the idxs the client units have read and all they will read
  // (a caller's progress bar; it may throw to stop the run, e.g. on Ctrl-C).
  std::function<void(int64_t read, int64_t total)> progress;
  int64_t progress_events = int64_t{1} << 20;
};
inline constexpr int64_t kLinkStatsOff = 0;
inline constexpr int64_t kLinkStatsAuto = -1;

// Row b * links + l of each array is link l in bin b = [b bin_ps, (b + 1) bin_ps).
struct LinkStatsResult {
  int64_t bin_ps = 0, bins = 0, links = 0;
  std::vector<int64_t> busy_ps;    // serialising
  std::vector<int64_t> bytes;      // wire bytes of the packets that started in the bin
  std::vector<int64_t> packets;    // packets that started in the bin
  std::vector<int64_t> queue_ps;   // integral of the queue length (packets x ps): mean = queue_ps / bin_ps
  // Most packets queued at once for a positive time: a packet that goes straight on the wire was never
  // queued, and several changes at one instant count as their end state.
  std::vector<int64_t> queue_max;
};

class LinkStats {
 public:
  static constexpr int64_t kMaxBins = 256;
  static constexpr int64_t kFirstBinPs = 1000;
  LinkStats(int64_t links, int64_t bin_ps);  // bin_ps: kLinkStatsAuto or > 0
  void busy(int64_t link, int64_t t0, int64_t t1, int64_t wire);  // a packet on the wire over [t0, t1)
  void queue(int64_t link, int64_t t, int64_t delta);             // the link's queue changes by delta at t
  LinkStatsResult finish();

 private:
  int64_t bin(int64_t t);  // the bin of t, after adding (fixed) or merging (automatic) bins as needed
  void coarsen();
  int64_t* at(std::vector<int64_t>& v, int64_t b, int64_t link) { return &v[b * r_.links + link]; }

  bool automatic_;
  LinkStatsResult r_;
  std::vector<int64_t> q_len_, q_since_;  // per link: packets queued now, and since when
};

}  // namespace netsparse::sim
