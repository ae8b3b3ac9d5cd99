#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "cli/temp_dir.h"
#include "engine/ir/error.h"
#include "models/tasks/trans_dict.h"

using namespace kiln;
using namespace kiln::models;
using doctest::Contains;

TEST_CASE("trans_dict: markup is dropped and spaces normalized") {
  CHECK(strip_markup("Aal {m} (auf der Speisekarte) [cook.]") == "Aal");
  CHECK(strip_markup("Aalmolche {pl} <Aalmolch> (Amphiuma)") == "Aalmolche");
  CHECK(strip_markup("(teilweise) Änderung {f} (an etw.)") == "Änderung");
  CHECK(strip_markup("a (outer (inner) still outer) b") == "a b");
  CHECK(strip_markup("Aal (blau), grün") == "Aal, grün");
  CHECK(strip_markup("unclosed (gloss stays") == "unclosed (gloss stays");
  CHECK(strip_markup("   many \t  spaces  ") == "many spaces");
  CHECK(normalize_spaces(" Ich  muss diesen Termin absagen . ") == "Ich muss diesen Termin absagen.");
}

TEST_CASE("trans_dict: aligned alternatives become pairs of first synonyms") {
  const auto pairs = parse_trans_line(
      "Aasfliege {f} [zool.]; Schmeißfliege {f} | Aasfliegen {pl} | Ich muss diesen Termin absagen. :: "
      "carrion fly; fleshfly | carrion flies; fleshflies | I’ll have to cancel this appointment.");
  REQUIRE(pairs.size() == 3);
  CHECK(pairs[0] == TextPair{"Aasfliege", "carrion fly"});
  CHECK(pairs[1] == TextPair{"Aasfliegen", "carrion flies"});
  CHECK(pairs[2] == TextPair{"Ich muss diesen Termin absagen.", "I’ll have to cancel this appointment."});
}

TEST_CASE("trans_dict: lines that do not align give nothing") {
  CHECK(parse_trans_line("# Version :: devel 2023-01-30").empty());
  CHECK(parse_trans_line("").empty());
  CHECK(parse_trans_line("Haus {n} | Häuser {pl} :: house").empty());  // 2 German parts, 1 English
  CHECK(parse_trans_line("kein Trenner hier").empty());
  CHECK(parse_trans_line("a :: b :: c").empty());
}

TEST_CASE("trans_dict: a part that is only markup is skipped") {
  // The second alternative holds nothing but markup on the German side.
  const auto pairs = parse_trans_line("Haus {n} | {pl} [ugs.] | Häuschen {n} :: house | houses | cottage");
  REQUIRE(pairs.size() == 2);
  CHECK(pairs[0] == TextPair{"Haus", "house"});
  CHECK(pairs[1] == TextPair{"Häuschen", "cottage"});
  // A side longer than kMaxPairChars is dropped.
  const std::string long_side(kMaxPairChars + 1, 'x');
  CHECK(parse_trans_line("kurz :: " + long_side).empty());
}

TEST_CASE("trans_dict: a file is read in order without duplicates") {
  TempDir dir;
  const std::string path = dir.file("de-en");
  std::ofstream(path) << "# comment :: not an entry\n"
                         "Haus {n} | Häuser {pl} :: house | houses\n"
                         "Baum {m} [bot.] :: tree\n"
                         "Haus {n} :: house\n"
                         "Katze {f} | Katzen :: cat\n";  // misaligned: skipped
  const auto pairs = read_trans_dict(path);
  REQUIRE(pairs.size() == 3);
  CHECK(pairs[0] == TextPair{"Haus", "house"});
  CHECK(pairs[1] == TextPair{"Häuser", "houses"});
  CHECK(pairs[2] == TextPair{"Baum", "tree"});
}

TEST_CASE("trans_dict: a missing or empty file is a clear error") {
  TempDir dir;
  const std::string missing = dir.file("no-such-dictionary");
  CHECK_THROWS_WITH_AS(read_trans_dict(missing),
                       ("cannot read " + missing + ": install Debian's trans-de-en package").c_str(), Error);
  const std::string empty = dir.file("empty");
  std::ofstream(empty) << "# only a comment\n";
  CHECK_THROWS_WITH_AS(read_trans_dict(empty), Contains("holds no dictionary entries"), Error);
}

TEST_CASE("trans_dict: the installed dictionary gives plausible pairs") {
  const std::string path = "/usr/share/trans/de-en";
  if (!std::filesystem::exists(path)) {
    MESSAGE("skipped: " << path << " is not installed (Debian package trans-de-en)");
    return;
  }
  const auto pairs = read_trans_dict(path);
  CHECK(pairs.size() > 200000);  // 388437 from the 2023-01-30 release
  CHECK(pairs.size() < 1000000);
  std::size_t empty_sides = 0;
  bool found = false;
  for (const TextPair& p : pairs) {
    empty_sides += p.de.empty() + p.en.empty();
    if (p.de == "Ich muss diesen Termin absagen.") found = p.en == "I’ll have to cancel this appointment.";
  }
  CHECK(empty_sides == 0);
  CHECK(found);
}
