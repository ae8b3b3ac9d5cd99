#include "ops/matmul.h"

#include <xtensor/xbroadcast.hpp>

#include "ops/elementwise.h"
#include "ops/families.h"
#include "ops/grad_util.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

Value matmul(Builder& b, Value lhs, Value rhs, bool transpose_a, bool transpose_b) {
  return b.emit1("matmul", {lhs, rhs}, {{"transpose_a", transpose_a}, {"transpose_b", transpose_b}});
}

namespace {

// An operand seen as a batch of matrices, after its transpose flag.
struct MatrixOperand {
  Shape batch;
  int64_t rows = 0, cols = 0;
};

MatrixOperand matrix_operand(const Shape& s, bool transposed) {
  const size_t r = s.size();
  MatrixOperand m{Shape(s.begin(), s.end() - 2), s[r - 2], s[r - 1]};
  if (transposed) std::swap(m.rows, m.cols);
  return m;
}

std::vector<TensorType> matmul_infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  for (size_t i = 0; i < 2; ++i) {
    check_dtype(in[i], {DType::f32, DType::bf16}, operand_role(i));
    check_min_rank(in[i], 2, operand_role(i));
  }
  if (in[0].dtype != in[1].dtype)
    throw Error("operands are " + std::string(dtype_name(in[0].dtype)) + " and " +
                std::string(dtype_name(in[1].dtype)) + ": both f32 or both bf16");
  const MatrixOperand a = matrix_operand(in[0].shape, attrs.get_bool("transpose_a"));
  const MatrixOperand b = matrix_operand(in[1].shape, attrs.get_bool("transpose_b"));
  if (a.cols != b.rows) {
    throw Error(std::string("inner dimensions differ: ")
                    .append(std::to_string(a.cols))
                    .append(" (operand 0) vs ")
                    .append(std::to_string(b.rows))
                    .append(" (operand 1)"));
  }
  Shape out;
  try {
    out = broadcast_shapes(a.batch, b.batch);
  } catch (const Error&) {
    throw Error(std::string("batch dims ")
                    .append(shape_str(a.batch))
                    .append(" and ")
                    .append(shape_str(b.batch))
                    .append(" do not broadcast"));
  }
  out.push_back(a.rows);
  out.push_back(b.cols);
  return {{DType::f32, out}};
}

// Plain loops with float accumulation; each operand is first broadcast to the
// result's batch dims so batch i of every array sits at offset i * matrix size.
void matmul_reference(const KernelArgs& args) {
  const bool ta = args.attrs.get_bool("transpose_a"), tb = args.attrs.get_bool("transpose_b");
  Tensor::F32& c = args.out[0]->f32();
  const Shape out_shape = args.out[0]->shape();
  const Shape batch(out_shape.begin(), out_shape.end() - 2);
  const auto full = [&batch](const Tensor& t) {
    Shape s = batch;
    const Shape ts = t.shape();
    s.insert(s.end(), ts.end() - 2, ts.end());
    // bf16 widens exactly: the products and sums are f32's, as the JIT's.
    if (t.dtype() == DType::bf16)
      return Tensor::F32(xt::broadcast(xt::cast<float>(t.bf16()), xt_shape(s)));
    return Tensor::F32(xt::broadcast(t.f32(), xt_shape(s)));
  };
  const Tensor::F32 a = full(*args.in[0]), b = full(*args.in[1]);
  const size_t m_dim = static_cast<size_t>(out_shape[out_shape.size() - 2]);
  const size_t n_dim = static_cast<size_t>(out_shape.back());
  const size_t k_dim = static_cast<size_t>(matrix_operand(args.in[0]->shape(), ta).cols);
  for (size_t bi = 0; bi < static_cast<size_t>(numel(batch)); ++bi) {
    const float* pa = a.data() + bi * m_dim * k_dim;
    const float* pb = b.data() + bi * k_dim * n_dim;
    float* pc = c.data() + bi * m_dim * n_dim;
    for (size_t m = 0; m < m_dim; ++m)
      for (size_t n = 0; n < n_dim; ++n) {
        float acc = 0.0f;
        for (size_t k = 0; k < k_dim; ++k)
          acc += (ta ? pa[k * m_dim + m] : pa[m * k_dim + k]) * (tb ? pb[n * k_dim + k] : pb[k * n_dim + n]);
        pc[m * n_dim + n] = acc;
      }
  }
}

// With A = lhs, B = rhs and op(X) = X or X^T by the flags, C = op(A) op(B) gives
// d op(A) = dC op(B)^T and d op(B) = op(A)^T dC. Undoing each operand's own transpose
// folds into the flags of one matmul per operand (no explicit transposes). Those
// products have the full batch dims; sum_to_shape folds them back where an
// operand's were broadcast. With bf16 operands the gradient products take dC
// in bf16 too (as autocast's backward does), and each operand's gradient is
// cast to its dtype.
std::vector<Value> matmul_gradient(Builder& b, const Node& node, const std::vector<Value>& dy) {
  const bool ta = node.attrs.get_bool("transpose_a"), tb = node.attrs.get_bool("transpose_b");
  const Value lhs = node.operands[0], rhs = node.operands[1];
  const DType dtype = b.type(lhs).dtype;
  const Value dc = dtype == DType::f32 ? dy[0] : cast(b, dy[0], dtype);
  const Value dlhs = ta ? matmul(b, rhs, dc, tb, true) : matmul(b, dc, rhs, false, !tb);
  const Value drhs = tb ? matmul(b, dc, lhs, true, ta) : matmul(b, lhs, dc, !ta, false);
  const auto as_operand = [&](Value grad, Value operand) {
    const Value summed = sum_to_shape(b, grad, b.type(operand).shape);
    return dtype == DType::f32 ? summed : cast(b, summed, dtype);
  };
  return {as_operand(dlhs, lhs), as_operand(drhs, rhs)};
}

}  // namespace

void register_matmul(OpRegistry& r) {
  r.add(OpDef{.name = "matmul",
              .summary = "batched matrix product over the last two dims, batch dims broadcast; transpose flags; "
                         "f32 result (bf16 operands: f32 products and sums)",
              .min_operands = 2,
              .max_operands = 2,
              .attrs = {optional_attr("transpose_a", false), optional_attr("transpose_b", false)},
              .infer = matmul_infer,
              .reference = matmul_reference,
              .gradient = matmul_gradient,
              .lowering = Lowering::reads_memory,
              .takes_epilogue = true});
}

}  // namespace kiln::ops
