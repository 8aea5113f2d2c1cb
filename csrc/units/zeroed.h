#pragma once
// A fixed-size array that starts zeroed. A large one is mapped straight from the OS, whose fresh pages
// are zero: there is no memset, and a page never touched costs no memory. (calloc would not do: once
// the process has freed large blocks, glibc serves them from its heap and zero-fills them itself.)
// For the simulator's per-node arrays (Idx Filter bits, concatenator packet buffers) that fill was a
// large part of a small run's set-up, mostly on pages the run never touches.
#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace netsparse::units {

template <class T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable_v<T> && alignof(T) <= alignof(std::max_align_t),
                "zero bytes must be a valid T");
  static constexpr size_t kMapBytes = size_t{1} << 16;  // smaller arrays come from the heap

 public:
  ZeroedArray() = default;
  explicit ZeroedArray(size_t n) : n_(n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= kMapBytes) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      mapped_ = p != MAP_FAILED;
      if (mapped_) p_ = static_cast<T*>(p);
    }
    if (!mapped_ && n > 0) {  // small, or no mapping to be had: operator new throws std::bad_alloc
      p_ = static_cast<T*>(::operator new(bytes));
      std::memset(static_cast<void*>(p_), 0, bytes);
    }
  }
  ZeroedArray(ZeroedArray&& o) noexcept { swap(o); }
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    ZeroedArray(std::move(o)).swap(*this);
    return *this;
  }
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;
  ~ZeroedArray() {
    if (mapped_) munmap(p_, n_ * sizeof(T));
    else ::operator delete(p_);
  }

  size_t size() const { return n_; }
  T* data() { return p_; }
  const T* data() const { return p_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }
  T* begin() { return p_; }
  T* end() { return p_ + n_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }

 private:
  void swap(ZeroedArray& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(mapped_, o.mapped_);
  }
  T* p_ = nullptr;
  size_t n_ = 0;
  bool mapped_ = false;
};

}  // namespace netsparse::units
