#include "models/transformer/transformer_kind.h"

#include <sstream>

#include "models/transformer/config.h"
#include "models/transformer/transformer.h"

namespace kiln::models {

ModelKind transformer_model_kind() {
  return {"transformer", "the encoder-decoder Transformer of the paper, trained on parallel text (translation)",
          [](const std::string& json) { return param_types(config_from_json(json)); },
          [](const std::string& json) {
            const TransformerConfig c = config_from_json(json);
            std::ostringstream s;
            s << "'" << c.name << "' (vocab " << c.vocab << ", d_model " << c.d_model << ", " << c.heads
              << " heads, d_ff " << c.d_ff << ", " << c.enc_layers << "+" << c.dec_layers << " layers, max_len "
              << c.max_len << ")";
            return s.str();
          }};
}

}  // namespace kiln::models
