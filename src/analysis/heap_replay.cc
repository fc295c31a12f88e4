#include "objprof/analysis/heap_replay.h"

#include "fmt_format.h"
#include "format_util.h"
#include "parallel.h"
#include "svg_chart.h"

#include <tbb/enumerable_thread_specific.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <unordered_map>

namespace objprof::analysis {

namespace {

bool overlaps(std::uint64_t addr, std::uint64_t size, const ReplayWindow& w) {
  const std::uint64_t end = addr + std::max<std::uint64_t>(size, 1);
  return addr < w.begin + w.bytes && end > w.begin;
}

// Segments of object o that fall in the window.
void segments_of(const TraceAnalysis& a, ObjectId o, const ReplayWindow& w, std::vector<ReplaySegment>& out) {
  const ChainStore& c = a.objects;
  const std::uint64_t size = c.size_of(o);
  const auto add = [&](std::uint64_t addr, std::uint64_t from, std::uint64_t to, ReplaySegment::End end) {
    if (!overlaps(addr, size, w)) return;
    ReplaySegment s;
    s.id = o;
    s.addr = addr;
    s.size = size;
    s.t_from = from;
    s.t_to = std::max(to, from);
    s.end = end;
    if (end == ReplaySegment::End::kDied) {
      const std::uint32_t d = c.death_epoch(o);
      s.t_collected_to = std::max(s.t_to, d + 1 < a.gcs.size() ? a.gcs[d + 1].bytes_begin : a.end_bytes);
    }
    out.push_back(s);
  };
  const std::uint64_t stop = c.alive(o) ? a.end_bytes : a.gc_clock(c.death_epoch(o));
  const ReplaySegment::End last = c.alive(o) ? ReplaySegment::End::kAlive : ReplaySegment::End::kDied;
  if (!c.moved(o)) {
    add(c.birth_addr(o), c.birth_bytes(o), stop, last);
    return;
  }
  const std::vector<Placement> p = c.placements(o);
  for (std::size_t i = 0; i < p.size(); ++i) {
    const std::uint64_t from = i == 0 ? c.birth_bytes(o) : a.gc_clock(p[i].epoch);
    const bool final = i + 1 == p.size();
    add(p[i].addr, from, final ? stop : a.gc_clock(p[i + 1].epoch), final ? last : ReplaySegment::End::kMoved);
  }
}

}  // namespace

Result<HeapReplay> heap_replay(const TraceAnalysis& a, const ReplayOptions& opt) {
  HeapReplay r;
  if (opt.follow && *opt.follow >= a.objects.size())
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("object {} does not exist (the trace has {} objects)", *opt.follow, a.objects.size()));
  if (opt.window) {
    r.window = *opt.window;
  } else if (opt.follow) {
    std::uint64_t lo = ~std::uint64_t{0}, hi = 0;
    for (const Placement& p : a.objects.placements(*opt.follow)) {
      lo = std::min(lo, p.addr);
      hi = std::max(hi, p.addr + std::max<std::uint64_t>(a.objects.size_of(*opt.follow), 1));
    }
    // Pad a little and round to 4 KiB so the axis labels are readable addresses.
    const std::uint64_t pad = std::max<std::uint64_t>((hi - lo) / 16, 1024);
    r.window.begin = (lo > pad ? lo - pad : 0) & ~std::uint64_t{4095};
    const std::uint64_t end = std::min<std::uint64_t>(hi + pad, ~std::uint64_t{0} - 4095);
    r.window.bytes = ((end + 4095) & ~std::uint64_t{4095}) - r.window.begin;
  } else if (a.objects.size() > 0) {
    // The busiest 16 KiB (the paper's Fig. 7 window): the one where most objects, of an even
    // sample of at most 65536, were born.
    std::unordered_map<std::uint64_t, std::uint64_t> births;
    const std::size_t n = a.objects.size(), step = std::max<std::size_t>(1, n / 65536);
    std::uint64_t best = 0, best_count = 0;
    for (std::size_t i = 0; i < n; i += step) {
      const std::uint64_t w = a.objects.birth_addr(static_cast<ObjectId>(i)) >> 14;
      const std::uint64_t c = ++births[w];
      if (c > best_count || (c == best_count && w < best)) {
        best = w;
        best_count = c;
      }
    }
    r.window.begin = best << 14;
    r.window.bytes = 16 * 1024;
  }
  if (r.window.bytes == 0) return make_error(ErrorCode::kInvalidArgument, "the replay window is empty");
  if (r.window.begin + r.window.bytes < r.window.begin)
    return make_error(ErrorCode::kInvalidArgument, "the replay window wraps around the address space");
  r.t_end = a.end_bytes;
  for (const GcRecord& g : a.gcs) r.gc_clocks.push_back(g.bytes_begin);

  tbb::enumerable_thread_specific<std::vector<ReplaySegment>> parts;
  internal::parallel_range(a.objects.size(), 1 << 15, [&](const tbb::blocked_range<std::size_t>& range) {
    std::vector<ReplaySegment>& out = parts.local();
    for (std::size_t i = range.begin(); i != range.end(); ++i) segments_of(a, static_cast<ObjectId>(i), r.window, out);
  });
  for (auto& p : parts) r.segments.insert(r.segments.end(), p.begin(), p.end());
  std::sort(r.segments.begin(), r.segments.end(), [](const ReplaySegment& x, const ReplaySegment& y) {
    return x.t_from != y.t_from ? x.t_from < y.t_from : x.addr != y.addr ? x.addr < y.addr : x.id < y.id;
  });
  r.segments_total = r.segments.size();
  if (r.segments.size() > opt.max_segments && opt.max_segments > 0) {
    // Thin evenly over time, so the whole run stays visible (a prefix would stop mid-way).
    std::vector<ReplaySegment> kept;
    kept.reserve(opt.max_segments);
    for (std::size_t i = 0; i < opt.max_segments; ++i) kept.push_back(r.segments[i * r.segments.size() / opt.max_segments]);
    r.segments.swap(kept);
  }

  if (opt.follow) {
    const ObjectId o = *opt.follow;
    r.follow = o;
    r.follow_size = a.objects.size_of(o);
    const std::vector<Placement> p = a.objects.placements(o);
    for (std::size_t i = 0; i < p.size(); ++i)
      r.path.push_back({i == 0 ? a.objects.birth_bytes(o) : a.gc_clock(p[i].epoch), p[i].addr});
    r.path.push_back({a.objects.alive(o) ? a.end_bytes : a.gc_clock(a.objects.death_epoch(o)), p.back().addr});
  }
  return r;
}

std::string replay_svg(const TraceAnalysis& a, const HeapReplay& r) {
  constexpr double W = 960, H = 520, L = 110, R = 20, T = 40, B = 60;
  const double pw = W - L - R, ph = H - T - B;
  const double t_max = static_cast<double>(std::max<std::uint64_t>(r.t_end, 1));
  const double span = static_cast<double>(std::max<std::uint64_t>(r.window.bytes, 1));
  auto px = [&](std::uint64_t t) { return L + pw * static_cast<double>(t) / t_max; };
  auto py = [&](std::uint64_t addr) {
    const double off = addr < r.window.begin ? 0.0 : std::min(span, static_cast<double>(addr - r.window.begin));
    return T + ph * off / span;
  };
  std::string out;
  auto o = std::back_inserter(out);
  const std::string title = fmt::format("Heap replay: [{:#x}, {:#x}) ({}), {} segments{}", r.window.begin,
                                        r.window.begin + r.window.bytes, internal::human_bytes(r.window.bytes), r.segments_total,
                                        r.segments.size() < r.segments_total ? fmt::format(" ({} drawn, evenly thinned)", r.segments.size()) : "");
  fmt::format_to(o,
                 R"(<svg xmlns="http://www.w3.org/2000/svg" class="chart replay" viewBox="0 0 {} {}" width="{}" height="{}" role="img">)"
                 "\n<title>{}</title>\n"
                 R"(<rect x="0" y="0" width="{}" height="{}" fill="#ffffff"/>)"
                 R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#f7f7f2" stroke="#333333"/>)"
                 "\n"
                 R"(<text x="{}" y="24" font-size="15" font-family="sans-serif" font-weight="bold">{}</text>)"
                 "\n",
                 W, H, W, H, internal::xml_escape(title), W, H, L, T, pw, ph, L, internal::xml_escape(title));
  for (const ReplaySegment& s : r.segments) {
    const double y0 = py(s.addr), y1 = std::max(py(s.addr + std::max<std::uint64_t>(s.size, 1)), y0 + 1.0);
    const double x0 = px(s.t_from), x1 = std::max(px(s.t_to), x0 + 1.0);
    fmt::format_to(o, R"(<rect class="alloc" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="#222222"/>)" "\n", x0, y0,
                   x1 - x0, y1 - y0);
    if (s.end == ReplaySegment::End::kDied) {
      const double x2 = std::max(px(s.t_collected_to), x1 + 1.0);
      fmt::format_to(o, R"(<rect class="dead" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="#b0b0b0"/>)" "\n", x1, y0,
                     x2 - x1, y1 - y0);
    }
  }
  // GCs: thin vertical lines over the segments (thinned when there are many).
  const std::size_t every = r.gc_clocks.size() <= 300 ? 1 : (r.gc_clocks.size() + 299) / 300;
  for (std::size_t i = 0; i < r.gc_clocks.size(); i += every)
    fmt::format_to(o, R"(<line class="gc" x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{}" stroke="#3a78c8" stroke-opacity="0.55"/>)" "\n",
                   px(r.gc_clocks[i]), T, px(r.gc_clocks[i]), T + ph);
  if (!r.path.empty()) {
    std::string d;
    for (std::size_t i = 0; i < r.path.size(); ++i) {
      const double y = py(r.path[i].addr + r.follow_size / 2);
      if (i == 0) fmt::format_to(std::back_inserter(d), "M{:.1f},{:.1f}", px(r.path[i].t), y);
      else fmt::format_to(std::back_inserter(d), " L{:.1f},{:.1f} L{:.1f},{:.1f}", px(r.path[i].t), py(r.path[i - 1].addr + r.follow_size / 2),
                          px(r.path[i].t), y);
    }
    fmt::format_to(o, R"(<path class="follow" d="{}" fill="none" stroke="#d62728" stroke-width="2.5"><title>object {} ({})</title></path>)" "\n",
                   d, *r.follow, internal::xml_escape(site_label(a.site_of(*r.follow))));
  }
  // Axes.
  for (int i = 0; i <= 4; ++i) {
    const std::uint64_t addr = r.window.begin + r.window.bytes / 4 * static_cast<std::uint64_t>(i);
    const std::uint64_t t = static_cast<std::uint64_t>(t_max * i / 4.0);
    fmt::format_to(o, R"(<text x="{}" y="{:.1f}" font-size="10" font-family="monospace" text-anchor="end">{:#x}</text>)" "\n", L - 4,
                   py(addr) + 3, addr);
    fmt::format_to(o, R"(<text x="{:.1f}" y="{}" font-size="10" font-family="sans-serif" text-anchor="middle">{}</text>)" "\n", px(t),
                   T + ph + 14, internal::xml_escape(internal::human_bytes(t)));
  }
  fmt::format_to(o, R"(<text x="{}" y="{}" font-size="12" font-family="sans-serif" text-anchor="middle">time (bytes allocated); blue lines: GCs</text>)" "\n",
                 L + pw / 2, H - 24);
  fmt::format_to(o,
                 R"(<rect x="{}" y="{}" width="10" height="10" fill="#222222"/><text x="{}" y="{}" font-size="11" font-family="sans-serif">allocated</text>)"
                 R"(<rect x="{}" y="{}" width="10" height="10" fill="#b0b0b0"/><text x="{}" y="{}" font-size="11" font-family="sans-serif">collected (until the next GC)</text>)"
                 "\n",
                 L, H - 14, L + 14, H - 5, L + 100, H - 14, L + 114, H - 5);
  if (r.follow)
    fmt::format_to(o, R"(<rect x="{}" y="{}" width="10" height="3" fill="#d62728"/><text x="{}" y="{}" font-size="11" font-family="sans-serif">object {} path</text>)" "\n",
                   L + 330, H - 10, L + 344, H - 5, *r.follow);
  out += "</svg>\n";
  return out;
}

Result<ReplayWindow> parse_replay_window(const std::string& text) {
  const std::size_t colon = text.find(':');
  const auto bad = [&] {
    return make_error(ErrorCode::kParse, fmt::format("window '{}' is not ADDR:BYTES (e.g. 0x7f0000001000:16K)", text));
  };
  if (colon == std::string::npos) return bad();
  std::string addr = text.substr(0, colon);
  int base = 10;
  if (addr.size() > 2 && addr[0] == '0' && (addr[1] == 'x' || addr[1] == 'X')) {
    addr = addr.substr(2);
    base = 16;
  }
  ReplayWindow w;
  auto [p, ec] = std::from_chars(addr.data(), addr.data() + addr.size(), w.begin, base);
  if (addr.empty() || ec != std::errc() || p != addr.data() + addr.size()) return bad();
  if (!internal::parse_size_text(text.substr(colon + 1), w.bytes) || w.bytes == 0) return bad();
  if (w.begin + w.bytes < w.begin) return make_error(ErrorCode::kInvalidArgument, fmt::format("window '{}' wraps around the address space", text));
  return w;
}

}  // namespace objprof::analysis
