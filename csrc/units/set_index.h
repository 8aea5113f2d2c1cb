#pragma once
// The set of a line id in a set-associative cache (the switch's property cache, the SNIC's tag caches), and
// the tag that tells the set's lines apart (line / sets): a mask and a shift where the set count is a power
// of two (Table 5's), a division only otherwise.
#include <cstdint>

namespace netsparse::units {

template <class T>
class SetIndex {
 public:
  SetIndex() = default;
  explicit SetIndex(T sets) : sets_(sets), pow2_((sets & (sets - 1)) == 0) {
    while ((T{1} << shift_) < sets_) ++shift_;
  }
  T operator()(T line) const { return pow2_ ? line & (sets_ - 1) : line % sets_; }
  T tag(T line) const { return pow2_ ? line >> shift_ : line / sets_; }

 private:
  T sets_ = 1;
  bool pow2_ = true;
  int shift_ = 0;
};

}  // namespace netsparse::units
