// bindthem's NVRTC prelude: libcu++ standing in for the host standard library
#if __has_include(<cuda/std/complex>)
#include <cuda/std/cstddef>
#include <cuda/std/cstdint>
#include <cuda/std/climits>
#include <cuda/std/cstdlib>
#include <cuda/std/cstring>
#include <cuda/std/limits>
#include <cuda/std/cmath>
#include <cuda/std/complex>
#include <cuda/std/utility>
#include <cuda/std/type_traits>
#if __has_include(<cuda/std/__algorithm/min.h>)
#include <cuda/std/__algorithm/max.h>
#include <cuda/std/__algorithm/min.h>
#endif
namespace std {
using ::cuda::std::size_t;
using ::cuda::std::ptrdiff_t;
using ::cuda::std::int8_t; using ::cuda::std::int16_t;
using ::cuda::std::int32_t; using ::cuda::std::int64_t;
using ::cuda::std::uint8_t; using ::cuda::std::uint16_t;
using ::cuda::std::uint32_t; using ::cuda::std::uint64_t;
using ::cuda::std::numeric_limits;
using ::cuda::std::max; using ::cuda::std::min;
using ::cuda::std::swap; using ::cuda::std::pair; using ::cuda::std::move;
using ::cuda::std::abs; using ::cuda::std::fabs; using ::cuda::std::sqrt;
using ::cuda::std::exp; using ::cuda::std::log; using ::cuda::std::pow;
using ::cuda::std::sin; using ::cuda::std::cos; using ::cuda::std::tan;
using ::cuda::std::floor; using ::cuda::std::ceil; using ::cuda::std::fmin;
using ::cuda::std::fmax; using ::cuda::std::isnan; using ::cuda::std::isinf;
using ::cuda::std::real; using ::cuda::std::imag; using ::cuda::std::conj;
using ::cuda::std::norm; using ::cuda::std::arg; using ::cuda::std::polar;
template <class T>
class complex : public ::cuda::std::complex<T> {
public:
    using ::cuda::std::complex<T>::complex;
    __host__ __device__ constexpr complex(const ::cuda::std::complex<T> &c)
        : ::cuda::std::complex<T>(c) {}
};
}  // namespace std
#endif
