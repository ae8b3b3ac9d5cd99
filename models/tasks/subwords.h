#pragma once
// A joint German-English subword vocabulary: a sentencepiece unigram model.
// Ids: pad 0, unk 1, bos 2, eos 3. Text is not normalized (the dictionary reader
// already collapsed whitespace), so decode(encode(text)) == text for text made of
// characters the model covers.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace kiln::models {

inline constexpr int32_t kSubwordPad = 0, kSubwordUnk = 1, kSubwordBos = 2, kSubwordEos = 3;

// Subwords are learned from an evenly spaced sample of a corpus, at most this
// many texts: more costs time and changes the pieces little (on the de-en
// dictionary, every 8th pair: about 17 s of CPU on 2 threads, against 37 s on 1
// thread for twice the sample).
inline constexpr std::size_t kSubwordSampleTexts = 100000;
// The step between sampled items of `items` items of `texts_per_item` texts
// each, so that the sample holds at most kSubwordSampleTexts texts.
inline std::size_t subword_sample_stride(std::size_t items, std::size_t texts_per_item) {
  return std::max<std::size_t>(1, (texts_per_item * items + kSubwordSampleTexts - 1) / kSubwordSampleTexts);
}

class Subwords {
 public:
  // Learns a model over `texts` with at most vocab_size pieces (fewer if the texts
  // are too small for that many) and returns it serialized. Deterministic: the same
  // texts give the same model bytes. kiln::Error with sentencepiece's message on failure.
  static std::string learn(const std::vector<std::string>& texts, int64_t vocab_size);

  // A model from serialized bytes; `origin` (a file path) names it in errors.
  Subwords(const std::string& serialized_model, const std::string& origin);
  Subwords(Subwords&&) noexcept;
  Subwords& operator=(Subwords&&) noexcept;
  ~Subwords();

  int64_t size() const;
  std::vector<int32_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int32_t>& ids) const;

 private:
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace kiln::models
