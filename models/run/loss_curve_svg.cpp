#include "models/run/loss_curve_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace kiln::models {
namespace {

constexpr double kWidth = 800, kHeight = 480;
constexpr double kLeft = 80, kTop = 44, kBottom = 56;  // plot area margins
constexpr double kRightPlain = 24, kRightAxis = 64;     // the right margin without and with a right-hand axis
constexpr size_t kMaxBuckets = 1000;  // a long series keeps each bucket's min and max: <= 2000 points
constexpr size_t kMaxMarked = 60;     // series this short also get a dot per point
constexpr double kLargest = 1e150;    // beyond this a value counts as diverged, like inf (keeps spans finite)
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

using Point = std::pair<double, double>;

std::string xml_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;  // XML 1.0 has no other controls
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// Finite points only (NaN fails every comparison); a long series reduced to each bucket's lowest and highest
// point (in step order), so spikes survive the downsampling.
std::vector<Point> drawable(const std::vector<Point>& points) {
  std::vector<Point> finite;
  for (const Point& p : points)
    if (std::abs(p.first) <= kLargest && std::abs(p.second) <= kLargest) finite.push_back(p);
  if (finite.size() <= 2 * kMaxBuckets) return finite;
  std::vector<Point> out;
  const size_t bucket = (finite.size() + kMaxBuckets - 1) / kMaxBuckets;
  for (size_t start = 0; start < finite.size(); start += bucket) {
    const auto first = finite.begin() + start, last = finite.begin() + std::min(start + bucket, finite.size());
    auto [lo, hi] =
        std::minmax_element(first, last, [](const Point& a, const Point& b) { return a.second < b.second; });
    if (lo > hi) std::swap(lo, hi);
    out.push_back(*lo);
    if (hi != lo) out.push_back(*hi);
  }
  return out;
}

// An axis from round tick to round tick: ticks at 1, 2 or 5 times a power of ten,
// at most about 6 of them.
struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
  int decimals = 0;

  Axis(double min, double max) {
    if (!(min <= max)) min = 0, max = 1;      // no data
    if (max - min <= std::abs(max) * 1e-9) {  // one value: a window around it
      const double pad = min == 0 ? 0.5 : std::abs(min) * 0.1;
      min -= pad, max += pad;
    }
    const double raw = (max - min) / 5;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    double step = 10 * magnitude;
    for (double f : {1.0, 2.0, 5.0})
      if (f * magnitude >= raw) {
        step = f * magnitude;
        break;
      }
    const double first = std::floor(min / step), last = std::ceil(max / step);
    if (!(step > 0) || !std::isfinite(first) || !std::isfinite(last) || last - first > 12) {  // subnormal ranges
      lo = min, hi = max, ticks = {min, max}, decimals = 3;
      return;
    }
    lo = first * step;
    hi = last * step;
    for (double k = first; k <= last; ++k) ticks.push_back(k * step == 0 ? 0.0 : k * step);
    decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  }

  std::string label(double v) const {
    char buf[48];
    if (v == 0) return "0";
    if (std::abs(v) >= 1e6 || (v != 0 && std::abs(v) < 1e-4))
      std::snprintf(buf, sizeof buf, "%.3g", v);
    else
      std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
  }
};

}  // namespace

std::string loss_curve_svg(const std::string& title, const std::vector<CurveSeries>& series,
                           const std::string& right_label) {
  std::vector<std::vector<Point>> drawn;
  const double inf = std::numeric_limits<double>::infinity();
  double xmin = inf, xmax = -inf, ymin[2] = {inf, inf}, ymax[2] = {-inf, -inf};  // [left, right]
  bool has_right = false;
  for (const CurveSeries& s : series) {
    drawn.push_back(drawable(s.points));
    has_right = has_right || s.right_axis;
    for (const auto& [x, y] : drawn.back()) {
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      ymin[s.right_axis] = std::min(ymin[s.right_axis], y), ymax[s.right_axis] = std::max(ymax[s.right_axis], y);
    }
  }
  const Axis xa(xmin, xmax), ya(ymin[0], ymax[0]), ra(ymin[1], ymax[1]);
  const double kRight = has_right ? kRightAxis : kRightPlain;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  const auto sx = [&](double x) { return kLeft + (x - xa.lo) / (xa.hi - xa.lo) * pw; };
  const auto sy_on = [&](const Axis& a, double y) { return kTop + ph - (y - a.lo) / (a.hi - a.lo) * ph; };
  const auto sy = [&](double y) { return sy_on(ya, y); };

  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << kWidth / 2 << "\" y=\"26\" text-anchor=\"middle\" font-size=\"16\">" << xml_escaped(title)
    << "</text>\n";

  o << "<g stroke=\"#ddd\">\n";  // grid
  for (double t : xa.ticks)
    o << "<line x1=\"" << num(sx(t)) << "\" y1=\"" << kTop << "\" x2=\"" << num(sx(t)) << "\" y2=\"" << kTop + ph
      << "\"/>\n";
  for (double t : ya.ticks)
    o << "<line x1=\"" << kLeft << "\" y1=\"" << num(sy(t)) << "\" x2=\"" << kLeft + pw << "\" y2=\"" << num(sy(t))
      << "\"/>\n";
  o << "</g>\n";
  o << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"black\"/>\n";
  o << "<g text-anchor=\"middle\">\n";
  for (double t : xa.ticks)
    o << "<text x=\"" << num(sx(t)) << "\" y=\"" << kTop + ph + 18 << "\">" << xa.label(t) << "</text>\n";
  o << "</g>\n<g text-anchor=\"end\">\n";
  for (double t : ya.ticks)
    o << "<text x=\"" << kLeft - 6 << "\" y=\"" << num(sy(t) + 4) << "\">" << ya.label(t) << "</text>\n";
  o << "</g>\n";
  o << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kHeight - 14 << "\" text-anchor=\"middle\">step</text>\n"
    << "<text x=\"20\" y=\"" << kTop + ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 20 " << kTop + ph / 2
    << ")\">loss</text>\n";
  if (has_right) {
    o << "<g text-anchor=\"start\">\n";
    for (double t : ra.ticks)
      o << "<text x=\"" << kLeft + pw + 6 << "\" y=\"" << num(sy_on(ra, t) + 4) << "\">" << ra.label(t) << "</text>\n";
    const double rx = kWidth - 14;
    o << "</g>\n<text x=\"" << rx << "\" y=\"" << kTop + ph / 2 << "\" text-anchor=\"middle\" transform=\"rotate(90 " << rx
      << " " << kTop + ph / 2 << ")\">" << xml_escaped(right_label) << "</text>\n";
  }

  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = kColors[i % std::size(kColors)];
    const auto& pts = drawn[i];
    const Axis& axis = series[i].right_axis ? ra : ya;
    if (pts.size() >= 2) {
      o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\""
        << (series[i].right_axis ? " stroke-dasharray=\"6 3\"" : "") << " points=\"";
      for (size_t k = 0; k < pts.size(); ++k)
        o << (k ? " " : "") << num(sx(pts[k].first)) << "," << num(sy_on(axis, pts[k].second));
      o << "\"/>\n";
    }
    if (pts.size() <= kMaxMarked)
      for (const auto& [x, y] : pts)
        o << "<circle cx=\"" << num(sx(x)) << "\" cy=\"" << num(sy_on(axis, y)) << "\" r=\"2.5\" fill=\"" << color
          << "\"/>\n";
  }

  // Legend: top right inside the plot.
  size_t longest = 0;
  for (const CurveSeries& s : series) longest = std::max(longest, s.label.size());
  const double legend_width = 48 + 7 * static_cast<double>(longest);  // about 7 px per character
  const double lx = kLeft + pw - legend_width - 10, ly = kTop + 10;
  if (!series.empty())
    o << "<rect x=\"" << lx << "\" y=\"" << ly << "\" width=\"" << legend_width << "\" height=\""
      << 20 * series.size() + 8 << "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#999\"/>\n";
  for (size_t i = 0; i < series.size(); ++i) {
    const double y = ly + 18 + 20 * static_cast<double>(i);
    o << "<line x1=\"" << lx + 8 << "\" y1=\"" << y - 4 << "\" x2=\"" << lx + 32 << "\" y2=\"" << y - 4
      << "\" stroke=\"" << kColors[i % std::size(kColors)] << "\" stroke-width=\"2\"/>\n"
      << "<text x=\"" << lx + 40 << "\" y=\"" << y << "\">" << xml_escaped(series[i].label) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace kiln::models
