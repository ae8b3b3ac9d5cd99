#include "tools/onnx_import/model_reader.h"

#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "engine/ir/error.h"
#include "engine/ir/read_file.h"  // kMiB
#include "tools/onnx_import/converters.h"
#include "tools/onnx_import/import_context.h"
#include "engine/tensor/memory_check.h"

namespace kiln::onnx {

namespace {

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// Protobuf's own limit on a message.
constexpr size_t kMaxModelBytes = 2047 * kMiB;

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

[[noreturn]] void not_a_model() {
  throw Error("not an ONNX model: protobuf cannot parse it (a truncated file, or not ONNX at all)");
}

// Protobuf accepts many byte strings (a prefix cut at a field boundary, text
// whose bytes happen to be valid fields), so a model must have what every ONNX
// writer writes.
void check_parsed(const ::onnx::ModelProto& model) {
  if (model.ir_version() <= 0 || model.opset_import_size() == 0 || !model.has_graph())
    throw Error("not an ONNX model: it lacks an IR version, an opset import or a graph");
  if (model.graph().output_size() == 0) throw Error("not an ONNX model: its graph has no outputs (truncated?)");
}

}  // namespace

::onnx::ModelProto read_model_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error("cannot read " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw Error(path + ": " + file_kind(st.st_mode) + ", not a model file (kiln import reads a regular file)");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > kMaxModelBytes)
    throw Error(path + ": " + std::to_string(size) + " bytes, beyond protobuf's limit of " +
                std::to_string(kMaxModelBytes) + " bytes for an ONNX model");
  checked_bytes(size, 2, path + " (an ONNX model of " + std::to_string(size) + " bytes, parsed, then its tensors)");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot read " + path + ": " + std::strerror(errno));
  ::onnx::ModelProto model;
  google::protobuf::io::FileInputStream in(fd);
  in.SetCloseOnDelete(true);
  const bool parsed = model.ParseFromZeroCopyStream(&in);
  if (in.GetErrno() != 0) throw Error("cannot read " + path + ": " + std::strerror(in.GetErrno()));
  try {
    if (!parsed) not_a_model();
    check_parsed(model);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return model;
}

::onnx::ModelProto parse_model(const std::string& bytes) {
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) not_a_model();
  check_parsed(model);
  return model;
}

namespace {

std::optional<int64_t> default_opset_if_any(const ::onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (is_default_domain(o.domain())) return o.version();
  return std::nullopt;
}

}  // namespace

int64_t default_opset(const ::onnx::ModelProto& model) {
  if (const auto opset = default_opset_if_any(model)) return *opset;
  throw Error("the model imports no version of the default ONNX domain");
}

// Ops of another domain are listed with it (kiln imports the default domain only),
// before what the default domain's opset says.
void check_importable(const ::onnx::ModelProto& model) {
  const std::optional<int64_t> default_version = default_opset_if_any(model);
  const int64_t opset = default_version.value_or(0);
  std::vector<std::string> problems;
  if (!default_version)
    problems.push_back("the model imports no version of the default ONNX domain");
  else if (opset > kMaxOpset || opset < 1)
    problems.push_back("the model imports opset " + std::to_string(opset) +
                       " of the default ONNX domain; kiln implements opsets 1 to " + std::to_string(kMaxOpset));
  std::map<std::string, std::vector<std::string>> missing;  // op -> node names
  std::string attributes;                                   // a line per node
  for (const auto& n : model.graph().node()) {
    const bool ours = is_default_domain(n.domain());
    const OpConverter* row = ours ? find_converter(n.op_type()) : nullptr;
    if (!row) {
      const std::string op =
          ours ? n.op_type() : n.op_type() + " (domain " + n.domain() + ", not the default ONNX domain)";
      const bool unnamed = n.name().empty() && n.output_size() > 0;  // then its first output names it
      missing[op].push_back(unnamed ? "making '" + n.output(0) + "'" : "'" + n.name() + "'");
      continue;
    }
    std::string unknown;
    for (const auto& a : n.attribute())
      if (std::find(row->attributes.begin(), row->attributes.end(), a.name()) == row->attributes.end())
        unknown += (unknown.empty() ? "" : ", ") + a.name();
    if (!unknown.empty()) attributes += "\n  " + node_label(n) + ": " + unknown;
  }
  if (!missing.empty()) {
    std::string msg = std::to_string(missing.size()) + " ONNX op" + (missing.size() > 1 ? "s" : "") +
                      " that kiln cannot import:";
    for (const auto& [op, nodes] : missing) {
      msg += "\n  " + op + ": node" + (nodes.size() > 1 ? "s " : " ");
      for (size_t i = 0; i < nodes.size(); ++i) msg += (i ? ", " : "") + nodes[i];
    }
    problems.push_back(msg);
  }
  if (!attributes.empty())
    problems.push_back("attributes kiln does not implement (at opset " + std::to_string(opset) + "):" + attributes);
  std::string msg;
  for (const std::string& p : problems) msg += (msg.empty() ? "" : "\n") + p;
  if (!msg.empty()) throw Error(msg);
}

void check_model(const ::onnx::ModelProto& model) {
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error(std::string("invalid ONNX model: ") + e.what());
  }
}

}  // namespace kiln::onnx
