#pragma once
// The types every part of the simulator shares (docs/simulator.md): its config and topology, the
// counters and event kinds the report names (X-macro lists), times and clock domains, and the result.
// The simulator's entry point is simulator.h; the system / network interface is network_api.h.
#include <cstdint>
#include <limits>
#include <cmath>
#include <string>
#include <vector>

#include "sim/extended.h"
#include "sim/link_stats.h"
#include "units/flit_link.h"

namespace netsparse::sim {

// Every SimConfig field once: X(type, name, meaning). No value lives here: hw_models/simulator.py
// (`sim_config`) fills every field from HardwareParams, which names each value's source (NetSparse
// Table 5 or our assumption); fields are value-initialised (zero) until then. The binding exposes the
// struct as hw_models._C.sim.SimConfig with one attribute per field.
#define NETSPARSE_SIM_CONFIG(X)                                                                                 \
  X(bool, filter, "Idx Filter on (Table 8 stage filter)")                                                      \
  X(bool, coalesce, "Pending PR Table coalescing on (Table 8 stage coalesce)")                                 \
  X(bool, concat_nic, "NIC concatenation on (Table 8 stage concat_nic); off = one PR per packet")              \
  X(bool, switch_on, "ToR property cache and concatenation on (Table 8 stage switch)")                         \
  X(int64_t, prop_bytes, "bytes of one gathered property (K x element bytes)")                                 \
  X(int64_t, client_units, "RIG client units per node")                                                        \
  X(int64_t, server_units, "RIG server units per node")                                                        \
  X(int64_t, pending_entries, "Pending PR Table entries per client unit")                                      \
  X(int64_t, lsq_entries, "LSQ entries per RIG unit: filter loads (client), PCIe reads (server)")              \
  X(int64_t, batch, "nonzeros per RIG command: > 0 fixed, or units::kWholeStreamBatch / kAutoBatch (rig_unit.h)")        \
  X(double, snic_ghz, "SmartNIC clock (GHz)")                                                                  \
  X(double, switch_ghz, "switch clock (GHz)")                                                                  \
  X(int64_t, nic_delay_cycles, "NIC concatenation delay (SNIC cycles); units::kInfiniteDelay = infinite")                        \
  X(int64_t, switch_delay_cycles, "switch concatenation delay (switch cycles); units::kInfiniteDelay = infinite")                \
  X(int64_t, cache_latency_cycles, "property cache lookup latency (switch cycles)")                            \
  X(int64_t, cache_bytes, "property cache of one middle pipe (bytes); -1 = unbounded")                         \
  X(int64_t, cache_ways, "property cache ways")                                                                \
  X(int64_t, cache_segment, "property cache segment (bytes)")                                                  \
  X(int64_t, cache_max_line, "property cache widest line (bytes)")                                             \
  X(int64_t, switch_pipes, "middle pipes per extended switch")                                                 \
  X(int64_t, switch_ports, "ports per switch")                                                                 \
  X(int64_t, pipe_prs_per_cycle, "PRs a ToR middle pipe takes per switch cycle")                                \
  X(int64_t, pcie_ps, "one-way PCIe latency (ps)")                                                             \
  X(double, pcie_bytes_per_s, "idx DMA bandwidth (bytes/s)")                                                   \
  X(int64_t, idx_bytes, "bytes per idx in a RIG command")                                                      \
  X(int64_t, line_bytes, "Idx Filter memory line (bytes)")                                                     \
  X(int64_t, l1_bytes, "client unit L1 (bytes)")                                                               \
  X(int64_t, l1_ways, "client unit L1 ways")                                                                   \
  X(int64_t, l1_cycles, "client unit L1 latency (SNIC cycles)")                                                \
  X(int64_t, l2_bytes, "client unit L2 (bytes)")                                                               \
  X(int64_t, l2_ways, "client unit L2 ways")                                                                   \
  X(int64_t, l2_cycles, "client unit L2 latency (SNIC cycles)")                                                \
  X(int64_t, llc_bytes, "SNIC LLC (bytes)")                                                                    \
  X(int64_t, llc_ways, "SNIC LLC ways")                                                                        \
  X(int64_t, llc_cycles, "SNIC LLC latency (SNIC cycles)")                                                     \
  X(int64_t, dram_ps, "SNIC DRAM latency (ps)")                                                                \
  X(int64_t, switch_ps, "switch latency (ps)")                                                                 \
  X(int64_t, mtu, "MTU (bytes)")                                                                               \
  X(int64_t, upper_bytes, "upper-layer header (bytes)")                                                        \
  X(int64_t, concat_bytes, "concatenation header (bytes)")                                                     \
  X(int64_t, pr_bytes, "PR header (bytes)")                                                                    \
  X(int64_t, switch_buffer_bytes, "shared packet buffer of a switch (bytes)")                                  \
  X(int64_t, rx_buffer_bytes, "SNIC Rx buffer (bytes)")                                                        \
  X(int64_t, tx_buffer_bytes, "SNIC Tx buffer (bytes)")                                                        \
  X(bool, overlap_commands, "a client unit scans its next command while its last one's PRs are pending (snic.rig_command_overlap=overlap)") \
  X(bool, host_filters_local, "RIG commands carry only remote idxs (snic.rig_local_idxs=host_filtered)")          \
  X(bool, auto_splits_remote, "batch=auto cuts a node's commands at every batch remote idxs (snic.rig_auto_split=remote_idxs)") \
  X(bool, dynamic_units, "a client unit holding no RIG command also serves read packets (snic.rig_unit_roles=dynamic)") \
  X(bool, flit_layer, "NetCrafter flit layer on the inter-switch links (then `flit` holds its parameters)")

struct SimConfig {
#define NETSPARSE_SIM_FIELD(type, name, meaning) type name{};
  NETSPARSE_SIM_CONFIG(NETSPARSE_SIM_FIELD)
#undef NETSPARSE_SIM_FIELD
  // NetCrafter (ISCA'25) flit link layer on the inter-switch (inter-rack) links, in the event loop:
  // each such link is a units::FlitLinkState; a packet enters its egress queue (class 0 = read PRs,
  // 1 = responses) and arrives at the next switch link latency after the flit holding its last byte
  // left (stitching, pooling and sequencing decide when).
  units::FlitLinkConfig flit;
};

struct Topo {
  int64_t n_hosts = 0, n_switches = 0;
  // Vertices: hosts 0..h-1, then switches h..h+s-1. Links come in cable pairs: 2k and 2k+1 are the
  // two directions of one cable (hw_models/topology.py builds them so); a switch's ports are its
  // outgoing links in id order.
  std::vector<int64_t> link_src, link_dst;
  std::vector<double> link_bytes_per_s;
  std::vector<int64_t> link_latency_ps;
  std::vector<uint8_t> switch_is_tor;  // extended (NetSparse) switches when switch_on
  // [paths, h, h, max_hops] link ids, -1 padded: a pair's alternative paths (one per spine a packet may
  // take, topology.leafspine_spine_choice=per_packet; else one), all of the same length.
  std::vector<int64_t> routes;
  int64_t max_hops = 0, paths = 1;
};

// Every simulator counter once: X(name, meaning). The binding returns them by these names, and the
// counter table of docs/simulator.md is generated from these lists (hw_models.simulator.counter_table).
#define NETSPARSE_NODE_COUNTERS(X)                                                                     \
  X(idxs, "nonzeros (idxs) the node's client units read")                                              \
  X(local, "idxs of rows the node owns (no PR)")                                                       \
  X(filtered, "remote idxs dropped by the Idx Filter (response already written)")                      \
  X(coalesced, "remote idxs merged into a pending read PR (Pending PR Table)")                         \
  X(read_prs, "read PRs the client units issued")                                                      \
  X(responses, "responses the client units absorbed")                                                  \
  X(stalls, "times a client unit stalled on a full Pending PR Table")                                  \
  X(served, "read PRs answered by this node's server units")                                           \
  X(packets_tx, "packets the NIC sent")                                                                \
  X(packets_rx, "packets the node received")                                                           \
  X(prs_tx, "PRs (read and response) in the packets sent")                                             \
  X(header_tx, "header bytes sent (Table 5 upper + concatenation + PR headers)")                       \
  X(payload_tx, "payload bytes sent (properties)")                                                     \
  X(wire_tx, "wire bytes sent (header + payload)")                                                     \
  X(header_rx, "header bytes received")                                                                \
  X(payload_rx, "payload bytes received")                                                              \
  X(wire_rx, "wire bytes received")                                                                    \
  X(commands, "RIG commands run")                                                                      \
  X(batch, "the node's RIG batch size (nonzeros per command)")                                         \
  X(mem_l1, "Idx Filter loads that hit the unit's L1")                                                 \
  X(mem_l2, "Idx Filter loads that hit the unit's L2")                                                 \
  X(mem_llc, "Idx Filter loads that hit the SNIC LLC")                                                 \
  X(mem_dram, "Idx Filter loads that went to DRAM")                                                    \
  X(tx_waits, "client-unit calls that waited for Tx buffer room")                                      \
  X(rx_waits, "read packets that waited in the Rx buffer for a server unit or Tx room")                \
  X(rx_peak, "Rx buffer occupancy peak (bytes)")                                                       \
  X(tx_peak, "Tx buffer occupancy peak (bytes)")                                                       \
  X(credit_waits, "times the ToR -> host link waited for Rx credit")

#define NETSPARSE_SWITCH_COUNTERS(X)                                                                   \
  X(read_lookups, "read PRs looked up in the property caches")                                         \
  X(read_hits, "read PRs answered from a property cache")                                              \
  X(inserts, "properties inserted into the property caches")                                           \
  X(packets_in, "packets that arrived")                                                                \
  X(packets_out, "packets the middle pipes made")                                                      \
  X(pipe_prs, "PRs through the middle pipes")                                                          \
  X(pipe_wait_cycles, "switch cycles packets queued for a middle pipe")                                \
  X(buffer_peak, "shared packet buffer peak (bytes)")                                                  \
  X(credit_waits, "times a host -> switch link waited for buffer credit")

// The resources a node's critical path is charged to, in enum order (csrc/sim/breakdown.h; definition
// in docs/simulator.md, "Where a node's time goes"). The first 11 are charged by the client unit's
// Logic Engine clock, tx_link to remote_server along a PR's journey, rx at its end, host between commands.
#define NETSPARSE_BOUNDS(X)                                                                            \
  X(scan_local, "RIG client idx scan, idxs of local rows (one idx per SNIC cycle)")                   \
  X(scan_filtered, "RIG client idx scan, idxs the Idx Filter dropped")                                 \
  X(scan_coalesced, "RIG client idx scan, idxs coalesced into a pending PR")                           \
  X(scan_issued, "RIG client idx scan, idxs that became read PRs (and one read PR per cycle)")         \
  X(filter_lsq, "Idx Filter loads waiting for a free LSQ entry")                                       \
  X(filter_l1, "Idx Filter load latency, L1 hits")                                                     \
  X(filter_l2, "Idx Filter load latency, L2 hits")                                                     \
  X(filter_llc, "Idx Filter load latency, SNIC LLC hits")                                              \
  X(filter_dram, "Idx Filter load latency, SNIC DRAM")                                                 \
  X(pending_full, "client unit stalled on a full Pending PR Table")                                    \
  X(tx_link, "Tx: SNIC Tx buffer, host uplink queue, serialisation and propagation (and Tx full)")    \
  X(nic_concat, "PRs waiting in a NIC concatenation queue (either end)")                               \
  X(switch_latency, "switch latency (ingress parser to egress, fixed per switch hop)")                  \
  X(switch_middle, "ToR middle pipe: queue for the pipe, its PRs per cycle, cache lookup")              \
  X(switch_concat, "PRs waiting in a ToR middle pipe's concatenation queue")                           \
  X(switch_links, "switch -> switch links: port queue, serialisation and propagation")               \
  X(rx_link, "ToR -> host link: port queue, Rx credit, serialisation and propagation")               \
  X(remote_server, "the owner node: Rx buffer wait for a server unit, property reads over PCIe (and, with dynamic RIG unit roles, a command's wait for its unit to finish serving)") \
  X(rx, "Rx: response deconcatenation and DMA into host memory (one PCIe latency)")                    \
  X(host, "host RIG command round trips: completion notification, MMIO, idx DMA")

// Per middle pipe of an extended ToR (the report's switch_pipes section).
#define NETSPARSE_PIPE_COUNTERS(X)                                                                     \
  X(switch_id, "the switch (vertex id - hosts)")                                                       \
  X(pipe, "the middle pipe within its switch")                                                         \
  X(packets, "packets the pipe took")                                                                  \
  X(prs, "PRs through the pipe")                                                                       \
  X(first_cycle, "switch cycle of the pipe's first packet arrival (-1: none)")                        \
  X(last_in_cycle, "switch cycle of the pipe's last packet arrival")                                    \
  X(last_cycle, "switch cycle the pipe was done with its last PR")                                     \
  X(peak_window_prs, "most PRs arriving within one window of 1024 switch cycles")                     \
  X(wait_cycles, "switch cycles packets queued before the pipe (sum over packets)")                    \
  X(pr_wait_cycles, "switch cycles PRs waited before the pipe took them (sum over PRs)")               \
  X(max_wait_cycles, "longest queueing delay of a packet before the pipe (switch cycles)")            \
  X(max_backlog, "most PRs queued for the pipe at a packet arrival, its own included (queue depth)")   \
  X(read_prs, "read PRs looked up in the pipe's property cache")                                       \
  X(hits, "read PRs answered from the pipe's cache")                                                   \
  X(misses, "read PRs that missed the pipe's cache")                                                   \
  X(inserts, "properties inserted into the pipe's cache")                                              \
  X(concat_wait_ps, "time PRs waited in the pipe's concatenation queue (sum over PRs, ps)")           \
  X(concat_prs, "PRs that left the pipe's concatenation queue")

// Event kinds in handling order of their enum; events_by_kind counts each by this name.
#define NETSPARSE_SIM_EVENTS(X)                                                                        \
  X(issue, "a client unit's call; the read PR it issued enters the NIC at this event")          \
  X(nic_push, "a server unit's response enters the NIC concatenator")                                  \
  X(nic_timer, "the NIC concatenator's earliest queue expires")                                        \
  X(switch_timer, "a middle pipe's concatenator's earliest queue expires")                             \
  X(tx_done, "a link is free and a packet waits behind the one on the wire")                            \
  X(arrive, "a packet off a flit link at the next vertex (flit layer)")                                    \
  X(pipe_done, "a middle pipe is done with a packet")                   \
  X(write, "a response packet in host memory")                                              \
  X(serve, "a server unit free for a waiting read packet")                                     \
  X(credit, "a credit reached a blocked sender")                                       \
  X(flit_tick, "a flit link's next flit event (flit layer)")                                                        \
  X(link_arrive, "a packet at the next vertex: for a switch, switch latency after its last bit")

struct NodeCounters {
#define NETSPARSE_COUNTER(name, meaning) int64_t name = 0;
  NETSPARSE_NODE_COUNTERS(NETSPARSE_COUNTER)
};

struct SwitchCounters {
  NETSPARSE_SWITCH_COUNTERS(NETSPARSE_COUNTER)
};

struct PipeCounters {
  NETSPARSE_PIPE_COUNTERS(NETSPARSE_COUNTER)
#undef NETSPARSE_COUNTER
};

constexpr int kBounds = 0
#define NETSPARSE_COUNT_BOUND(name, meaning) +1
    NETSPARSE_BOUNDS(NETSPARSE_COUNT_BOUND)
#undef NETSPARSE_COUNT_BOUND
    ;

// One stretch of a node's critical path: [t0, t1] and its time per resource (sums to t1 - t0).
struct PathSegment {
  int64_t node = 0, t0 = 0, t1 = 0;
  int64_t ps[kBounds] = {};
};

constexpr int kEventKinds = 0
#define NETSPARSE_COUNT_KIND(name, meaning) +1
    NETSPARSE_SIM_EVENTS(NETSPARSE_COUNT_KIND)
#undef NETSPARSE_COUNT_KIND
    ;

// One inter-switch link under the flit layer: the flit unit's accounting of the packets it carried.
struct FlitLinkResult {
  int64_t link = 0;
  double flit_ps = 0;          // one flit's serialisation time on this link
  int64_t packet_bytes = 0;    // the same packets' wire bytes as NetSparse packets (link_layer=packet)
  int64_t flit_finish_ps = 0;  // when the last flit left
  units::FlitLinkStats stats;
};

// One row of the network's hop log (run(..., log_hops = true); tests/test_sim_network.py checks both
// network implementations on it). kind kSent: the system side sent packet `serial` from vertex `where`
// at `queued`; kHop: it crossed link `where` (joined the link's queue at `queued`, left it at `start`,
// arrived at `arrive`; `avail`: the next buffer's credit after it took its room, kUnchecked on links
// that never wait for credit); kDelivered: the system side took it at vertex `where` at `arrive`.
struct HopRow {
  enum : int64_t { kSent, kHop, kDelivered };
  static constexpr int64_t kUnchecked = std::numeric_limits<int64_t>::min();
  int64_t kind = 0, serial = 0, where = 0, wire = 0, queued = 0, start = 0, arrive = 0, avail = kUnchecked;
};

struct SimResult {
  std::vector<int64_t> node_done_ps;
  std::vector<NodeCounters> nodes;
  std::vector<SwitchCounters> switches;
  std::vector<int64_t> active_t_ps, active_count;
  int64_t events = 0, max_packet_wire = 0, drains = 0;
  int64_t max_queue = 0;  // most events pending at once
  int64_t events_by_kind[kEventKinds] = {};
  std::vector<FlitLinkResult> flit_links;  // only with SimConfig::flit_layer
  std::vector<int64_t> bound_ps;           // [nodes, kBounds]: each node's critical path per resource
  std::vector<PathSegment> path;           // every node's critical path, stretch by stretch, in time order
  std::vector<double> stalled_on;          // [nodes, kBounds]: its path's unit's stall cycles by what they awaited
  std::vector<PipeCounters> pipes;         // one per middle pipe of an extended ToR
  std::vector<HopRow> hops;                // the hop log, only when asked for
  LinkStatsResult link_stats;              // stats=links, only when asked for (bins = 0 otherwise)
  double wall_s = 0, cpu_s = 0;  // the event loop's, measured
};

// The CSR of A without values. indptr: n_rows + 1 offsets; indices: nnz column ids, int32 (narrow)
// or int64, read in place (never copied or widened).
struct Csr {
  const int64_t* indptr = nullptr;
  int64_t n_rows = 0;
  const void* indices = nullptr;
  bool narrow = true;
  int64_t nnz = 0;
};

// Times are integer picoseconds; kNever is "not scheduled".
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// In the order of NETSPARSE_SIM_EVENTS, which names them in the report.
enum Kind : uint8_t {
  kIssue, kNicPush, kNicTimer, kSwitchTimer, kTxDone, kArrive, kSwitchDone, kWrite, kServe, kCredit, kFlitTick,
  kLinkArrive
};
static_assert(kLinkArrive + 1 == kEventKinds, "one Kind per entry of NETSPARSE_SIM_EVENTS");
static_assert(kEventKinds <= 16, "an event key holds its kind in 4 bits");

// Integer cycle <-> picosecond conversion of one clock domain (monotone, exact round trip). The
// definition is defined_cycle(): floor(ps ghz / 1000) with x87 long double's roundings, which every
// platform computes the same in integers (extended.h). cycle() and ps() first compute in double
// precision, whose error is bounded (under y 2^-51 for a value y < 2^52), and return that result
// only when it lies farther than the bound from a cycle boundary, where the formula cannot differ
// from exact arithmetic either (its own error is under y 2^-62). Near a boundary, which is where
// most simulated times are (every cycle start, and at a clock whose period is a whole number of
// picoseconds, such as Table 5's 2 GHz switches, every cycle start exactly), they decide in exact
// integer arithmetic (Exact) whether the formula can round across the boundary; only where it could
// do they evaluate it. Every result equals the formula's, and almost none need its 128-bit division
// (the formula in x87 math was a quarter of the event loop, then a twentieth with the boundaries on it).
class Clock {
 public:
  explicit Clock(double ghz_)
      : ghz(ghz_), cycles_per_ps_(ghz_ / 1000.0), ps_per_cycle_(1000.0 / ghz_), exact_(ghz_), extended_(ghz_) {}
  double ghz;
  // The cycle that has started by `ps`.
  int64_t cycle(int64_t ps) const {
    if (ps >= 0 && ps < kFast) {
      const double y = static_cast<double>(ps) * cycles_per_ps_;  // within y 2^-51 of ps ghz / 1000
      const int64_t q = static_cast<int64_t>(y);
      const double f = y - static_cast<double>(q);  // exact (Sterbenz)
      const double margin = y * kMargin;
      if (f > margin && f < 1.0 - margin) return q;
      int64_t c;
      if (exact_cycle(ps, c)) return c;
    }
    return defined_cycle(ps);
  }
  // The first picosecond of cycle `cyc`: the least p >= 0 with cycle(p) >= cyc (for cyc > 0).
  int64_t ps(int64_t cyc) const {
    if (cyc > 0 && cyc < kFast) {
      const double z = static_cast<double>(cyc) * ps_per_cycle_;  // within z 2^-51 of cyc 1000 / ghz
      const int64_t q = static_cast<int64_t>(z);
      const double f = z - static_cast<double>(q);
      const double margin = z * kMargin;
      if (f > margin && f < 1.0 - margin) return q + 1;  // cycle(q) < cyc <= cycle(q + 1), clear of rounding
      if (exact_.on && z < static_cast<double>(kFast)) {
        // The least p whose exact value reaches cyc is q or q + 1, or q + 2 after the double's rounding.
        int64_t p = q;
        while (!exact_.reaches(p, cyc)) ++p;
        while (p > 0 && exact_.reaches(p - 1, cyc)) --p;
        int64_t at, before;
        if (p > 0 && exact_cycle(p, at) && exact_cycle(p - 1, before) && at >= cyc && before < cyc) return p;
      }
    }
    return defined_ps(cyc);
  }
  // The first cycle that starts at or after `ps`.
  int64_t up(int64_t ps_) const {
    const int64_t c = cycle(ps_);
    return this->ps(c) == ps_ ? c : c + 1;
  }
  // The definitions of cycle() and ps(): floor(ps ghz / 1000) in x87 extended precision (64-bit
  // significands, nearest even after the product and after the quotient), in integers on every platform
  // (extended.h); the first picosecond of a cycle by it.
  int64_t defined_cycle(int64_t ps) const { return extended_.floor_cycle(ps); }
  int64_t defined_ps(int64_t cyc) const {
    int64_t p = static_cast<int64_t>(std::ceil(static_cast<double>(cyc) * 1000.0 / ghz));  // a start: the loops settle it
    while (defined_cycle(p) < cyc) ++p;
    while (p > 0 && defined_cycle(p - 1) >= cyc) --p;
    return p;
  }

 private:
  // The formula's cycle of 0 <= ps < 2^50 where exact arithmetic can tell it (false: it cannot).
  bool exact_cycle(int64_t ps, int64_t& out) const {
    return exact_.cycle(ps, std::llround(static_cast<double>(ps) * cycles_per_ps_), out);
  }
  // The exact value ps ghz / 1000 = ps mant / den in 128-bit integers (ghz = odd * 2^e, mant = odd 2^max(e, 0),
  // den = 1000 2^max(-e, 0)), and whether the formula's result is its floor. The formula rounds twice to
  // 64-bit significands (relative error under 2^-63 in all), so its floor is the exact floor when
  // the exact value lies farther than value 2^-61 from every integer; and when the exact value is an
  // integer, when its product ps ghz needs no more than 64 bits (then both roundings are exact).
  struct Exact {
    using U = unsigned __int128;
    bool on = false;
    U mant = 0, den = 0, odd = 0;
    explicit Exact(double ghz) {
      uint64_t bits = 0;
      int e = 0;
      if (!odd_times_power_of_two(ghz, bits, e)) return;
      // ps < 2^50 and odd < 2^53: num < 2^(103 + e) and r 2^61 < den 2^61 = 2^(71 - e) stay in 128 bits.
      if (e > 20 || e < -54) return;
      odd = bits;
      mant = U{bits} << (e > 0 ? e : 0);
      den = U{1000} << (e < 0 ? -e : 0);
      on = true;
    }
    // 0 <= ps < 2^50; k: an integer within one of ps ghz / 1000. False: the formula may round across.
    bool cycle(int64_t ps, int64_t k, int64_t& out) const {
      if (!on || k < 0) return false;
      const U num = U(static_cast<uint64_t>(ps)) * mant, at = U(static_cast<uint64_t>(k)) * den;
      U r;  // num = floor den + r, 0 <= r < den
      int64_t floor;
      if (num >= at) {
        r = num - at;
        floor = k;
        while (r >= den) {  // k was one low
          r -= den;
          ++floor;
        }
      } else {
        const U below = at - num;  // <= den: k was the ceiling (or one high)
        if (below > den) return false;
        r = den - below;
        floor = k - 1;
      }
      if (r == 0) {
        if (U(static_cast<uint64_t>(ps)) * odd >> 64 != 0) return false;
        out = floor;
        return true;
      }
      if ((r << 61) <= num || ((den - r) << 61) <= num) return false;
      out = floor;
      return true;
    }
    // Whether the exact value of p reaches cycle cyc (p ghz / 1000 >= cyc); 0 <= p, cyc < 2^50.
    bool reaches(int64_t p, int64_t cyc) const {
      return U(static_cast<uint64_t>(p)) * mant >= U(static_cast<uint64_t>(cyc)) * den;
    }
  };

  static constexpr int64_t kFast = int64_t{1} << 50;  // doubles hold these and their products' bounds
  static constexpr double kMargin = 0x1p-48;          // 8x the double error bound: clear of both roundings
  double cycles_per_ps_, ps_per_cycle_;
  Exact exact_;
  ExtendedRate extended_;
};

}  // namespace netsparse::sim
