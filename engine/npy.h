#pragma once
// Tensors in numpy's .npy format (format versions 1.0, 2.0 and 3.0).
//
// Loading accepts C-order little-endian arrays of '<f4' (f32), '<i4' (i32) and
// '|b1' (bool). Numpy's defaults '<f8' and '<i8' are converted to f32 and i32,
// refusing values the narrower type cannot hold. Anything else (fortran order,
// big-endian, other dtypes, truncated or corrupt files) is a kiln::Error naming
// the file. A shape whose data would not fit in the machine's memory is refused,
// naming it and its bytes, before anything is allocated.
#include <istream>
#include <string>
#include <string_view>

#include "engine/tensor/tensor.h"

namespace kiln {

Tensor load_npy(const std::string& path);

// The same from a seekable stream holding a whole .npy file (errors name NAME).
Tensor read_npy(std::istream& in, const std::string& name);

// Numpy's default dtypes as loading converts them: f64 to f32, i64 to i32, from
// `numel(shape)` row-major elements. kiln::Error naming the first element the
// narrower type cannot hold (a finite f64 beyond f32's range; an i64 beyond i32's).
Tensor narrow_f64(const double* data, const Shape& shape);
Tensor narrow_i64(const int64_t* data, const Shape& shape);

// The .npy file of `t` as its header and its data (a view of t's memory), for
// writing without a copy of the data.
std::string npy_header(const Tensor& t);
std::string_view tensor_bytes(const Tensor& t);

// Writes PATH atomically (engine/atomic_file.h), so an existing PATH is never
// left half-written. Throws kiln::Error naming the file.
void save_npy(const std::string& path, const Tensor& t);

}  // namespace kiln
