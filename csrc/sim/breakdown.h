#pragma once
// The critical-path breakdown (docs/simulator.md, "Where a node's time goes"): what each client unit's
// Logic Engine clock and each read PR's journey were held up by, so that a node's time splits exactly
// into resources (NETSPARSE_BOUNDS of types.h).
//
// A client unit's commands follow one another, so its timeline is host round trip, command, host round
// trip, ... and its last completion notification is the node's finish. A command's critical path goes
// back from its completion: if the unit's last idx decision came last, it is the whole idx scan; if a
// response came last, it is that response's PR's journey (issue -> response written) and, before it,
// the scan up to that PR's issue. The scan is charged idx by idx in SNIC cycles; a journey is charged
// per packet hop and folded into the PR at each unit that takes the packet apart.
#include <cstdint>

#include "sim/types.h"

namespace netsparse::sim {

// In the order of NETSPARSE_BOUNDS.
enum Bound : uint8_t {
  kScanLocal, kScanFiltered, kScanCoalesced, kScanIssued, kFilterLsq, kFilterL1, kFilterL2, kFilterLlc,
  kFilterDram, kPendingFull, kTxLink, kNicConcat, kSwitchLatency, kSwitchMiddle, kSwitchConcat, kSwitchLinks,
  kRxLink, kRemoteServer, kRx, kHost
};
static_assert(kHost + 1 == kBounds, "one Bound per entry of NETSPARSE_BOUNDS");

constexpr int kScanBounds = kTxLink + 1;             // charged by the Logic Engine clock (SNIC cycles)
// What a PR's journey stores (ps), in slots: the switch latency (kSwitchLatency) is not stored, it is
// what remains of the journey's time (one line per PR: 7 slots and the mark).
constexpr Bound kJourneySlots[] = {kTxLink, kNicConcat, kSwitchMiddle, kSwitchConcat, kSwitchLinks, kRxLink,
                                   kRemoteServer};
constexpr int kJourney = sizeof(kJourneySlots) / sizeof(kJourneySlots[0]);
constexpr int journey(Bound b) {
  for (int i = 0; i < kJourney; ++i)
    if (kJourneySlots[i] == b) return i;
  return -1;
}

// One outstanding read PR, by (requester, unit, Pending PR Table entry): its journey so far, one cache
// line (a unit takes a packet apart: one line per PR). The Rx step is the whole packet's, kept by the unit.
struct alignas(64) PrJourney {
  int64_t mark = 0;          // when it entered the unit or concatenation queue it is in now
  int64_t j[kJourney] = {};  // journey charges (ps)
};

static_assert(sizeof(PrJourney) == 64, "a PR's journey is one cache line");

// The unit's scan charges up to a read PR's issue, in cycles since the command's first scan cycle (read
// only for the response that completes a command). Overlapping commands: when the unit's next command
// starts, its PRs so far become an older command's (issued = kOlder), their issue time (ps) kept in the
// scan charges they no longer need (older_at).
struct PrScan {
  static constexpr uint32_t kOlder = UINT32_MAX;
  uint32_t issued = 0;
  uint32_t scan[kScanBounds] = {};
  int64_t older_at() const { return static_cast<int64_t>(scan[0]) | static_cast<int64_t>(scan[1]) << 32; }
};

// What a packet's hops add to each PR it carries (charged per packet, folded into the PRs when a unit
// takes the packet apart).
struct Hops {
  int64_t mark = 0;        // its last arrival (or birth)
  int64_t tx = 0, rx = 0, links = 0, middle = 0;  // kTxLink, kRxLink, kSwitchLinks, kSwitchMiddle
  int64_t born = 0;        // when a concatenator flushed it
  int32_t born_pipe = -1;  // the middle pipe whose concatenator made it; -1 = a NIC's
};

// Adds a packet's hops and its PRs' wait in the concatenator that made it to one PR.
inline void fold(PrJourney& tr, const Hops& h) {
  constexpr int nic = journey(kNicConcat), sw = journey(kSwitchConcat);
  tr.j[h.born_pipe < 0 ? nic : sw] += h.born - tr.mark;
  tr.j[journey(kTxLink)] += h.tx;
  tr.j[journey(kSwitchMiddle)] += h.middle;
  tr.j[journey(kSwitchLinks)] += h.links;
  tr.j[journey(kRxLink)] += h.rx;
}

}  // namespace netsparse::sim
