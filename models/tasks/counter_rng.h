#pragma once
// A deterministic random stream for data generation and shuffling: Philox4x32-10
// blocks with counter (n lo, n hi, stream lo, stream hi) and key `seed`, n = 0, 1, ...
// The same (seed, stream) gives the same numbers on every platform, unlike
// std::uniform_int_distribution, whose algorithm the standard leaves open.
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/tensor/philox.h"

namespace kiln::models {

class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t stream)
      : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}, stream_(stream) {}

  uint64_t next() {
    const philox::Counter out =
        philox::philox4x32_10({static_cast<uint32_t>(n_), static_cast<uint32_t>(n_ >> 32),
                               static_cast<uint32_t>(stream_), static_cast<uint32_t>(stream_ >> 32)},
                              key_);
    ++n_;
    return (uint64_t{out[1]} << 32) | out[0];
  }

  // Uniform in [0, bound), bound > 0 (Lemire's multiply-shift; the bias is below 2^-40
  // for the bounds used here).
  uint64_t below(uint64_t bound) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
  }

  template <class T>
  void shuffle(std::vector<T>& items) {  // Fisher-Yates
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  philox::Key key_;
  uint64_t stream_;
  uint64_t n_ = 0;
};

}  // namespace kiln::models
