// AVX-512BW 16 x 16 transpose of 16-bit elements in three rounds of vpermt2w.
//
// Each vector holds 32 elements of a (channel set, key set) block. The 8 inputs hold all 16
// channels of 2 keys each, key-major (element = key * 16 + channel). Every round pairs two
// vectors with the same channels and disjoint keys and produces two vectors that hold half the
// channels and all the keys of both, channel-major (element = channel * |keys| + key):
//   16 ch x 2 keys -> 8 ch x 4 keys -> 4 ch x 8 keys -> 2 ch x 16 keys,
// which is two rows of the transposed 16 x 16 block. The index vectors are computed once from
// that description.
#include <immintrin.h>

#include "kernels/cpu/common/simd_avx512.h"
#include "kernels/cpu/layout/transpose.h"

namespace mlaops::kernels {
namespace {

struct Indexes {
  alignas(64) uint16_t lo[3][32];  // round r: the lower half of the channels
  alignas(64) uint16_t hi[3][32];  // round r: the upper half
};

// Element index of (channel c, key k) in a vector holding `nc` channels x `nk` keys; round 0
// inputs are key-major, every later vector channel-major.
inline int pos(int round, int nc, int nk, int c, int k) { return round == 0 ? k * nc + c : c * nk + k; }

Indexes make_indexes() {
  Indexes ix;
  int nc = 16, nk = 2;  // each input of round r
  for (int r = 0; r < 3; ++r) {
    const int oc = nc / 2, ok = nk * 2;  // each output
    for (int half = 0; half < 2; ++half) {
      uint16_t* out = half == 0 ? ix.lo[r] : ix.hi[r];
      for (int c = 0; c < oc; ++c)
        for (int k = 0; k < ok; ++k) {
          const int src_c = half * oc + c;                // channel within the inputs
          const bool second = k >= nk;                    // keys [nk, 2nk) come from the second input
          const int src_k = second ? k - nk : k;
          out[c * ok + k] = static_cast<uint16_t>(pos(r, nc, nk, src_c, src_k) + (second ? 32 : 0));
        }
    }
    nc = oc;
    nk = ok;
  }
  return ix;
}

}  // namespace

void transpose16_avx512(const uint16_t* const src[16], uint16_t* dst) {
  static const Indexes ix = make_indexes();
  __m512i v[8];
  for (int i = 0; i < 8; ++i)
    v[i] = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src[2 * i]))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src[2 * i + 1])), 1);
  // Round r pairs vectors holding the same channels: keys blocks adjacent in v[] order.
  for (int r = 0, n = 8; r < 3; ++r) {
    const __m512i lo = _mm512_load_si512(ix.lo[r]), hi = _mm512_load_si512(ix.hi[r]);
    __m512i w[8];
    // inputs 2p, 2p+1 share channels; outputs: [lower channels | upper channels] stay grouped so
    // that the next round again finds same-channel vectors next to each other
    for (int p = 0; p < n / 2; ++p) {
      w[p] = _mm512_permutex2var_epi16(v[2 * p], lo, v[2 * p + 1]);
      w[n / 2 + p] = _mm512_permutex2var_epi16(v[2 * p], hi, v[2 * p + 1]);
    }
    for (int i = 0; i < 8; ++i) v[i] = w[i];
  }
  // v[i] now holds channels {2 * b(i), 2 * b(i) + 1}, all 16 keys: find its channel pair
  // from the grouping above (each round put the lower channel halves first).
  static const int order[8] = {0, 4, 2, 6, 1, 5, 3, 7};  // v index -> channel pair index
  for (int i = 0; i < 8; ++i) _mm512_storeu_si512(dst + order[i] * 32, v[i]);
}

}  // namespace mlaops::kernels
