// allreduce-buckets: the gradients' sums over the ranks, in buckets that start
// while the backward pass runs (DDP's and Horovod's idea, done by the compiler
// instead of hooks). A training step's optimizer asks for one allreduce per
// gradient, after the whole backward pass; one sum per gradient would pay MPI's
// latency hundreds of times, and one sum of everything could start only at the
// end. So the allreduces are taken in the order their operands are made (the
// backward pass makes the last layer's gradients first), cut into buckets of
// about kAllreduceBucketBytes, and each bucket is placed right after the node
// that makes its last operand: its operands flattened and concatenated into one
// contiguous buffer (a kernel of its own, which fusion merges with the
// operands' elementwise producers), one allreduce of it, and each result sliced
// back out just before its first reader (fusion merges the slices into the
// readers: the optimizer's kernel). The program then starts the bucket's sum
// there and waits for it just before its first reader.
//
// A bucket never holds an allreduce whose result is read before the bucket's
// last operand is made (that reader would have to wait for operands made after
// it), and holds one dtype.
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {
namespace {

constexpr int kDeclared = -1;  // the "producer" position of a declaration

struct Bucket {
  std::vector<size_t> nodes;  // allreduce nodes of the source, in producer order
  int ready = kDeclared;      // the last producer of an operand
  int first_read = std::numeric_limits<int>::max();  // the first reader of a result
  int64_t bytes = 0;
  DType dtype = DType::f32;
};

// Per value: the node that makes it (kDeclared for declarations), and the first node that reads it.
struct Positions {
  std::vector<int> producer, first_reader;
};

Positions positions(const Graph& g) {
  Positions p{std::vector<int>(g.num_values(), kDeclared), std::vector<int>(g.num_values(), std::numeric_limits<int>::max())};
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    for (Value r : n.results) p.producer[static_cast<size_t>(r.id)] = static_cast<int>(i);
    for (Value v : n.operands) {
      int& first = p.first_reader[static_cast<size_t>(v.id)];
      first = std::min(first, static_cast<int>(i));
    }
  }
  for (Value v : g.outputs()) p.first_reader[static_cast<size_t>(v.id)] = std::min(p.first_reader[static_cast<size_t>(v.id)], static_cast<int>(g.nodes().size()));
  return p;
}

// An allreduce of one dtype, every operand with elements (a slice of nothing
// cannot be written; an empty sum costs nothing where it stands).
bool bucketable(const Graph& g, const Node& n) {
  if (n.op() != "allreduce") return false;
  for (Value v : n.operands)
    if (g.type(v).dtype != g.type(n.operands[0]).dtype || g.type(v).numel() == 0) return false;
  return true;
}

std::vector<Bucket> make_buckets(const Graph& g, const Positions& pos, int64_t bucket_bytes) {
  struct Item {
    size_t node;
    int ready, first_read;
    int64_t bytes;
    DType dtype;
  };
  std::vector<Item> items;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (!bucketable(g, n)) continue;
    Item item{i, kDeclared, std::numeric_limits<int>::max(), 0, g.type(n.operands[0]).dtype};
    for (Value v : n.operands) {
      item.ready = std::max(item.ready, pos.producer[static_cast<size_t>(v.id)]);
      item.bytes += g.type(v).numel() * static_cast<int64_t>(dtype_size(g.type(v).dtype));
    }
    for (Value r : n.results) item.first_read = std::min(item.first_read, pos.first_reader[static_cast<size_t>(r.id)]);
    items.push_back(item);
  }
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.ready < b.ready; });
  std::vector<Bucket> buckets;
  std::map<DType, size_t> open;  // per dtype, the bucket still taking allreduces
  for (const Item& item : items) {
    const auto it = open.find(item.dtype);
    const bool joins = it != open.end() && buckets[it->second].bytes < bucket_bytes &&
                       std::max(buckets[it->second].ready, item.ready) <
                           std::min(buckets[it->second].first_read, item.first_read);
    if (!joins) {
      open[item.dtype] = buckets.size();
      buckets.push_back({{}, kDeclared, std::numeric_limits<int>::max(), 0, item.dtype});
    }
    Bucket& b = buckets[open[item.dtype]];
    b.nodes.push_back(item.node);
    b.ready = std::max(b.ready, item.ready);
    b.first_read = std::min(b.first_read, item.first_read);
    b.bytes += item.bytes;
  }
  // In the order they become ready, which is the order they are placed in.
  std::stable_sort(buckets.begin(), buckets.end(), [](const Bucket& a, const Bucket& b) { return a.ready < b.ready; });
  return buckets;
}

// Where a bucketed allreduce's result lies in its bucket's sum, until a node
// reads it: each result is sliced out just before its first reader, so that
// the program waits for the sum there and not right after it starts.
struct Part {
  Value sum;             // the bucket's allreduce, in the new graph
  int64_t offset = 0;    // of the result's first element in it
  size_t node = 0;       // the source allreduce
  bool whole = false;    // the bucket is this one result: no slice
};

class Buckets {
 public:
  explicit Buckets(GraphRewriter& rw) : rw_(rw), parts_(rw.source().num_values()) {}

  // The bucket's operands flattened and concatenated, and one allreduce of them.
  void emit(const Bucket& bucket, size_t number) {
    const Graph& src = rw_.source();
    const std::string name = "bucket" + std::to_string(number);
    std::vector<Value> flats;
    for (size_t i : bucket.nodes)
      for (Value v : src.nodes()[i].operands) {
        materialize(v);
        const Value x = rw_.map(v);
        const int64_t n = rw_.target().type(x).numel();
        flats.push_back(rw_.target().type(x).shape == Shape{n}
                            ? x
                            : rw_.emit(i, "reshape", {x}, {{"shape", Shape{n}}}, name + ".flat"));
      }
    const size_t first = bucket.nodes.front();
    const Value all = flats.size() == 1 ? flats[0] : rw_.emit(first, "concat", flats, {{"axis", int64_t{0}}}, name);
    const Value sum = rw_.emit(first, "allreduce", {all}, {}, name + ".sum");
    int64_t offset = 0;
    for (size_t i : bucket.nodes)
      for (Value r : src.nodes()[i].results) {
        parts_[static_cast<size_t>(r.id)] = Part{sum, offset, i, flats.size() == 1};
        offset += src.type(r).numel();
      }
  }

  // Slices out a bucketed result the first time it is read.
  void materialize(Value source_value) {
    std::optional<Part>& part = parts_[static_cast<size_t>(source_value.id)];
    if (!part) return;
    const TensorType& type = rw_.source().type(source_value);
    const std::string& name = rw_.source().name_of(source_value);
    Value v = part->sum;
    if (!part->whole)
      v = rw_.emit(part->node, "slice", {v},
                   {{"axes", std::vector<int64_t>{0}},
                    {"starts", std::vector<int64_t>{part->offset}},
                    {"ends", std::vector<int64_t>{part->offset + type.numel()}}},
                   name);
    if (!(rw_.target().type(v).shape == type.shape)) v = rw_.emit(part->node, "reshape", {v}, {{"shape", type.shape}}, name);
    rw_.replace(source_value, v);
    part.reset();
  }

 private:
  GraphRewriter& rw_;
  std::vector<std::optional<Part>> parts_;  // by source value
};

}  // namespace

Graph allreduce_buckets(const Graph& g, std::ostream* remarks, int64_t bucket_bytes) {
  const Positions pos = positions(g);
  const std::vector<Bucket> buckets = make_buckets(g, pos, bucket_bytes);
  std::vector<bool> bucketed(g.nodes().size(), false);
  for (const Bucket& b : buckets)
    for (size_t i : b.nodes) bucketed[i] = true;
  GraphRewriter rw(g);
  Buckets made(rw);
  size_t next = 0;  // buckets are in ready order
  const auto emit_ready = [&](int position) {
    for (; next < buckets.size() && buckets[next].ready <= position; ++next) {
      made.emit(buckets[next], next);
      if (remarks)
        *remarks << "allreduce-buckets: bucket" << next << ": " << buckets[next].nodes.size() << " allreduce(s), "
                 << buckets[next].bytes << " bytes, after "
                 << (buckets[next].ready < 0 ? std::string("the declarations")
                                             : "node " + std::to_string(buckets[next].ready) + " (" +
                                                   g.nodes()[static_cast<size_t>(buckets[next].ready)].op() + ")")
                 << "\n";
    }
  };
  emit_ready(kDeclared);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (!bucketed[i]) {
      for (Value v : g.nodes()[i].operands) made.materialize(v);
      rw.copy(i);
    }
    emit_ready(static_cast<int>(i));
  }
  for (Value v : g.outputs()) made.materialize(v);
  return rw.finish();
}

}  // namespace kiln::compiler
