#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "models/run/loss_curve_svg.h"

using namespace kiln::models;

namespace {

// A small XML well-formedness scan: every tag closes in order, attributes are
// quoted, no raw '<' or '&' outside markup and entities.
bool well_formed(const std::string& svg, std::string& why) {
  std::vector<std::string> open;
  size_t i = 0;
  if (svg.rfind("<?xml", 0) == 0) i = svg.find("?>") + 2;
  while (i < svg.size()) {
    if (svg[i] == '&') {
      const size_t semi = svg.find(';', i);
      const std::string entity = svg.substr(i, semi == std::string::npos ? 8 : semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" && entity != "&apos;") {
        why = "bad entity " + entity;
        return false;
      }
      i = semi + 1;
      continue;
    }
    if (svg[i] != '<') {
      ++i;
      continue;
    }
    const size_t end = svg.find('>', i);
    if (end == std::string::npos) {
      why = "unterminated tag";
      return false;
    }
    std::string tag = svg.substr(i + 1, end - i - 1);
    i = end + 1;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0 || tag.find('<') != std::string::npos) {
      why = "bad tag <" + tag + ">";
      return false;
    }
    if (tag.starts_with("/")) {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) {
        why = "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
        return false;
      }
      open.pop_back();
    } else if (!tag.ends_with("/")) {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
  }
  if (!open.empty()) why = "<" + open.back() + "> never closed";
  return open.empty();
}

// The text of every element `<name ...>` (or `<name .../>`) in order.
std::vector<std::string> elements(const std::string& svg, const std::string& name) {
  std::vector<std::string> out;
  for (size_t at = svg.find("<" + name + " "); at != std::string::npos; at = svg.find("<" + name + " ", at + 1))
    out.push_back(svg.substr(at, svg.find('>', at) - at + 1));
  return out;
}

// The value of attribute `name` in an element's text ("" if absent). (libstdc++'s
// std::regex recurses per character and overflows the stack on long polylines.)
std::string attribute(const std::string& element, const std::string& name) {
  const size_t at = element.find(" " + name + "=\"");
  if (at == std::string::npos) return "";
  const size_t begin = at + name.size() + 3;
  return element.substr(begin, element.find('"', begin) - begin);
}

// Every x,y pair of every polyline and every circle centre.
std::vector<std::pair<double, double>> plotted_points(const std::string& svg) {
  std::vector<std::pair<double, double>> out;
  for (const std::string& e : elements(svg, "polyline")) {
    std::istringstream pts(attribute(e, "points"));
    double x, y;
    char comma;
    while (pts >> x >> comma >> y) out.emplace_back(x, y);
  }
  for (const std::string& e : elements(svg, "circle"))
    out.emplace_back(std::stod(attribute(e, "cx")), std::stod(attribute(e, "cy")));
  return out;
}

// The plot area is the rect drawn with a black stroke.
struct Box {
  double x0, y0, x1, y1;
};
Box plot_area(const std::string& svg) {
  for (const std::string& e : elements(svg, "rect"))
    if (attribute(e, "stroke") == "black") {
      const double x = std::stod(attribute(e, "x")), y = std::stod(attribute(e, "y"));
      return {x, y, x + std::stod(attribute(e, "width")), y + std::stod(attribute(e, "height"))};
    }
  FAIL("no plot area");
  return {};
}

void check_valid(const std::string& svg) {
  std::string why;
  CHECK_MESSAGE(well_formed(svg, why), why);
  CHECK(svg.find("<script") == std::string::npos);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
  const Box box = plot_area(svg);
  for (const auto& [x, y] : plotted_points(svg)) {
    CHECK(x >= box.x0 - 1e-6);
    CHECK(x <= box.x1 + 1e-6);
    CHECK(y >= box.y0 - 1e-6);
    CHECK(y <= box.y1 + 1e-6);
  }
}

}  // namespace

TEST_CASE("a train and a dev curve: labels and ticks and every point inside the plot") {
  CurveSeries train{"train", {}}, dev{"dev <BLEU & loss>", {}};
  for (int s = 1; s <= 500; ++s) train.points.emplace_back(s, 9.0 * std::exp(-s / 120.0) + 1.2);
  for (int s = 100; s <= 500; s += 100) dev.points.emplace_back(s, 9.0 * std::exp(-s / 120.0) + 1.5);
  const std::string svg = loss_curve_svg("copy / tiny", {train, dev});
  check_valid(svg);
  CHECK(svg.find(">train<") != std::string::npos);
  CHECK(svg.find("dev &lt;BLEU &amp; loss&gt;") != std::string::npos);
  CHECK(svg.find(">copy / tiny<") != std::string::npos);
  CHECK(svg.find(">step<") != std::string::npos);
  CHECK(svg.find(">loss<") != std::string::npos);
  // Round ticks: steps 0..500 by 100, losses by 2.
  for (const char* tick : {">0<", ">100<", ">500<", ">2<", ">10<"})
    CHECK_MESSAGE(svg.find(tick) != std::string::npos, tick);
  CHECK(std::count(svg.begin(), svg.end(), '\n') < 200);
  CHECK(plotted_points(svg).size() == 500 + 5 + 5);  // the dev curve also gets dots
}

TEST_CASE("the highest point maps to the top of the data and the lowest step to the left") {
  CurveSeries s{"train", {{0, 1.0}, {10, 3.0}}};
  const std::string svg = loss_curve_svg("t", {s});
  check_valid(svg);
  const Box box = plot_area(svg);
  const auto pts = plotted_points(svg);
  REQUIRE(pts.size() >= 2);
  CHECK(pts[0].first == doctest::Approx(box.x0));  // step 0 on the left edge (ticks start at 0)
  CHECK(pts[1].first == doctest::Approx(box.x1));  // step 10 on the right edge
  CHECK(pts[1].second < pts[0].second);            // higher loss is higher up
}

TEST_CASE("empty and one-point and non-finite series still give a valid plot") {
  check_valid(loss_curve_svg("nothing", {}));
  check_valid(loss_curve_svg("empty", {{"train", {}}}));
  const std::string one = loss_curve_svg("one", {{"train", {{5, 2.5}}}});
  check_valid(one);
  CHECK(plotted_points(one).size() == 1);

  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::string bad = loss_curve_svg(
      "diverged", {{"train", {{1, 3.0}, {2, nan}, {3, inf}, {4, -inf}, {nan, 1.0}, {5, 1e300}, {6, 2.0}}},
                   {"all bad", {{1, nan}, {2, inf}}}});
  check_valid(bad);
  CHECK(plotted_points(bad).size() == 2 * 2);  // (1, 3) and (6, 2): polyline and dots
  CHECK(bad.find(">all bad<") != std::string::npos);

  check_valid(loss_curve_svg("flat", {{"train", {{1, 0.0}, {2, 0.0}, {3, 0.0}}}}));
  check_valid(loss_curve_svg("tiny range", {{"train", {{1, 1e-310}, {2, 3e-310}}}}));
  check_valid(loss_curve_svg("huge", {{"train", {{-1e149, -1e149}, {1e149, 1e149}}}}));
  check_valid(loss_curve_svg("negative", {{"train", {{-5, -2.5}, {5, 0.25}}}}));
}

TEST_CASE("long series are downsampled and keep their spikes") {
  CurveSeries s{"train", {}};
  for (int i = 0; i < 100000; ++i) s.points.emplace_back(i, i == 54321 ? 50.0 : 2.0 + std::sin(i * 0.01));
  const std::string svg = loss_curve_svg("long", {s});
  check_valid(svg);
  const auto pts = plotted_points(svg);
  CHECK(pts.size() <= 2000);
  CHECK(pts.size() >= 1000);
  const Box box = plot_area(svg);
  double top = box.y1;
  for (const auto& p : pts) top = std::min(top, p.second);
  CHECK(top == doctest::Approx(box.y0 + (box.y1 - box.y0) * (1 - 50.0 / 50.0)).epsilon(0.01));  // the spike reaches 50
}
