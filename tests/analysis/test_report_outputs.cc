// The report writers: JSON validated against the documented schema (docs/report.schema.json,
// with a small validator for the keywords it uses, itself checked on broken documents), CSV
// shape and quoting, the text report's sections, the HTML page's structure and escaping, and
// the Perfetto export's trace-event structure.
#include "trace_builder.h"

#include <objprof/analysis/analyzer.h>
#include <objprof/analysis/perfetto_export.h>
#include <objprof/analysis/report.h>
#include <objprof/analysis/report_csv.h>
#include <objprof/analysis/report_html.h>
#include <objprof/analysis/report_json.h>
#include <objprof/analysis/report_text.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

namespace test_report_outputs {

using namespace objprof;
using namespace objprof::analysis;
using nlohmann::json;
using objprof::test::TraceBuilder;

namespace {

// Validates `v` against a JSON Schema using the keywords docs/report.schema.json uses: $ref (to
// #/$defs), type, enum, minimum, pattern, required, properties, additionalProperties: false,
// items. Appends one message per violation.
void validate(const json& root, const json& s, const json& v, const std::string& at, std::vector<std::string>& errors) {
  if (s.contains("$ref")) {
    const std::string ref = s["$ref"];
    REQUIRE(ref.rfind("#/$defs/", 0) == 0);
    validate(root, root["$defs"][ref.substr(8)], v, at, errors);
    return;
  }
  if (s.contains("type")) {
    std::vector<std::string> types;
    if (s["type"].is_array()) for (const auto& t : s["type"]) types.push_back(t);
    else types.push_back(s["type"]);
    bool ok = false;
    for (const std::string& t : types) {
      ok |= (t == "object" && v.is_object()) || (t == "array" && v.is_array()) || (t == "string" && v.is_string()) ||
            (t == "integer" && v.is_number_integer()) || (t == "number" && v.is_number()) || (t == "boolean" && v.is_boolean()) ||
            (t == "null" && v.is_null());
    }
    if (!ok) {
      errors.push_back(at + ": type " + std::string(v.type_name()) + " is not " + s["type"].dump());
      return;
    }
  }
  if (s.contains("enum")) {
    bool found = false;
    for (const auto& e : s["enum"]) found |= e == v;
    if (!found) errors.push_back(at + ": " + v.dump() + " not in enum");
  }
  if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>()) errors.push_back(at + ": below minimum");
  if (s.contains("pattern") && v.is_string() && !std::regex_search(v.get<std::string>(), std::regex(s["pattern"].get<std::string>())))
    errors.push_back(at + ": '" + v.get<std::string>() + "' does not match " + s["pattern"].get<std::string>());
  if (v.is_object()) {
    if (s.contains("required"))
      for (const auto& k : s["required"])
        if (!v.contains(k.get<std::string>())) errors.push_back(at + ": missing required '" + k.get<std::string>() + "'");
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (s.contains("properties") && s["properties"].contains(it.key())) validate(root, s["properties"][it.key()], it.value(), at + "." + it.key(), errors);
      else if (s.contains("additionalProperties") && s["additionalProperties"] == false) errors.push_back(at + ": undocumented field '" + it.key() + "'");
    }
  }
  if (v.is_array() && s.contains("items"))
    for (std::size_t i = 0; i < v.size(); ++i) validate(root, s["items"], v[i], at + "[" + std::to_string(i) + "]", errors);
}

json load_schema() {
  std::ifstream in(std::string(OBJPROF_TEST_DATA_DIR) + "/../../docs/report.schema.json");
  REQUIRE(in.good());
  return json::parse(in);
}

// Names with characters every writer must escape.
TraceAnalysis awkward_trace() {
  TraceBuilder b;
  b.type(1, "Map<K, \"V\">", 48);
  b.type(2, "byte[]", 16, true);
  b.site(1, "Cache.put,\"evil\" <b>&", 7);
  b.site(2, "Main.loop", 3);
  b.thread(0, "main");
  b.thread(1, "io\tthread");
  for (std::uint64_t i = 0; i < 6; ++i) b.alloc(0, 1, 1, 0x10000 + 64 * i, 48);
  std::vector<std::uint64_t> arrays;  // touched in every epoch: not stale
  for (std::uint64_t i = 0; i < 20; ++i) {
    b.alloc(1, 2, 2, 0x11000 + 32 * i, 16 + 8 * (i % 3));
    if (i != 1 && i != 2) arrays.push_back(0x11000 + 32 * i);
  }
  b.gc({0x10000, 0x11000}, {0x11020, 0x11040}, {{0x10040, 0x12000}});
  arrays.push_back(0x10000);
  for (int e = 0; e < 5; ++e) b.gc(arrays);
  // The online tracker's path to one of the untouched maps, with a root name to escape.
  b.gc_begin();
  b.bitmap(arrays);
  b.path_found(1, 1, static_cast<std::uint8_t>(RootKind::kStatic), "static \"evil\" <b>",
               {{0x11060, 2, ""}, {0x10080, 1, "[3]"}});
  b.gc_end();
  b.thread_end(1);
  b.end();
  auto r = analyze(b.take());
  REQUIRE(r.ok());
  return std::move(*r);
}

Report report_of(const TraceAnalysis& a, bool diff = true) {
  ReportOptions o;
  o.trace_name = "awkward \"trace\" <x>";
  o.replay = true;  // as the HTML report does
  o.leaks.stale_after_bytes = 0;  // GC_K alone: the hand-built epochs allocate next to nothing
  if (diff) o.diff = std::pair<std::uint32_t, std::uint32_t>{1, a.end_epoch};
  auto r = build_report(a, o);
  REQUIRE(r.ok());
  return std::move(*r);
}

}  // namespace

TEST_CASE("JSON report validates against docs/report.schema.json", "[analysis][output]") {
  const json schema = load_schema();
  const TraceAnalysis a = awkward_trace();
  for (bool diff : {true, false}) {
    const json doc = json::parse(render_json(report_of(a, diff)));
    std::vector<std::string> errors;
    validate(schema, schema, doc, "$", errors);
    INFO("diff " << diff);
    for (const std::string& e : errors) FAIL_CHECK(e);
    CHECK(errors.empty());
    CHECK(doc["schema"] == kReportSchema);
    CHECK(doc["totals"]["objects"] == 26);
    CHECK(doc["leaks"]["sites"].size() == 1);  // the five untouched maps
    CHECK(doc["leaks"]["sites"][0]["site"] == "Cache.put,\"evil\" <b>&@7");
    const json& path = doc["leaks"]["sites"][0]["path"];
    CHECK(path["status"] == "found");
    CHECK(path["epoch"] == 6);
    CHECK(path["root_kind"] == "static");
    CHECK(path["root_name"] == "static \"evil\" <b>");
    REQUIRE(path["steps"].size() == 2);
    CHECK(path["steps"][0]["type"] == "byte[]");
    CHECK(path["steps"][1]["addr"] == "0x10080");
    CHECK(path["steps"][1]["type"] == "Map<K, \"V\">");
    CHECK(path["steps"][1]["via"] == "[3]");
    CHECK(doc["totals"]["path_records"] == 1);
    CHECK(doc["diff"].is_null() != diff);
    CHECK(doc["cohorts"]["cohorts"][0]["live_bytes"].size() == doc["timeline"]["epochs"].size());
  }
}

TEST_CASE("the schema validator catches what it must", "[analysis][output]") {
  const json schema = load_schema();
  json doc = json::parse(render_json(report_of(awkward_trace())));
  auto errors_of = [&](const json& d) {
    std::vector<std::string> e;
    validate(schema, schema, d, "$", e);
    return e.size();
  };
  REQUIRE(errors_of(doc) == 0);
  json missing = doc;
  missing["totals"].erase("live_bytes");
  CHECK(errors_of(missing) == 1);
  json extra = doc;
  extra["sites"]["rows"][0]["surprise"] = 1;
  CHECK(errors_of(extra) == 1);
  json wrong = doc;
  wrong["leaks"]["sites"][0]["oldest"]["placements"][0]["addr"] = "12345";
  CHECK(errors_of(wrong) == 1);
  json negative = doc;
  negative["gcs"][0]["freed_objects"] = -1;
  CHECK(errors_of(negative) == 1);
}

TEST_CASE("CSV tables: one header, equal field counts, RFC 4180 quoting", "[analysis][output]") {
  const TraceAnalysis a = awkward_trace();
  const Report r = report_of(a);
  // Splits one CSV document into records of fields (quotes, doubled quotes, CRLF).
  auto parse = [](const std::string& text) {
    std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (quoted) {
        if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') rows.back().back() += '"', ++i;
        else if (c == '"') quoted = false;
        else rows.back().back() += c;
      } else if (c == '"') quoted = true;
      else if (c == ',') rows.back().emplace_back();
      else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') rows.push_back(std::vector<std::string>(1)), ++i;
      else rows.back().back() += c;
    }
    if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
    return rows;
  };
  for (const char* name : {"leaks", "sites", "types", "threads", "survival", "cohorts", "sizes", "gcs", "diff"}) {
    auto t = parse_csv_table(name);
    REQUIRE(t.ok());
    auto csv = render_csv(r, *t);
    REQUIRE(csv.ok());
    const auto rows = parse(*csv);
    INFO(name << "\n" << *csv);
    REQUIRE(rows.size() >= 2);
    for (const auto& row : rows) CHECK(row.size() == rows[0].size());
  }
  const auto sites = parse(*render_csv(r, CsvTable::kSites));
  bool found = false;
  for (const auto& row : sites) found |= row[0] == "Cache.put,\"evil\" <b>&@7";
  CHECK(found);
  CHECK_FALSE(parse_csv_table("nope").ok());
  CHECK(parse_csv_table("nope").error().message.find("objects") != std::string::npos);
  CHECK_FALSE(render_csv(report_of(a, false), CsvTable::kDiff).ok());

  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  REQUIRE(write_objects_csv(a, {}, f).ok());
  std::rewind(f);
  std::string all;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) all.append(buf, n);
  std::fclose(f);
  const auto objects = parse(all);
  REQUIRE(objects.size() == 1 + a.objects.size());
  for (const auto& row : objects) CHECK(row.size() == 15);
  CHECK(objects[2][14] == "0@0x10040;0@0x12000");  // object 1 moved in GC 0
  CHECK(objects[1][13] == "0-6");                   // object 0 accessed in every epoch
}

TEST_CASE("text report: every section, readable numbers", "[analysis][output]") {
  const TraceAnalysis a = awkward_trace();
  const std::string t = render_text(report_of(a));
  for (const char* s : {"objprof report:", "Possible leaks", "Allocation sites", "Types", "Threads", "Survival by site", "Cohorts of",
                        "Object sizes", "GCs:", "Live heap diff"})
    CHECK(t.find(s) != std::string::npos);
  CHECK(t.find("Cache.put") != std::string::npos);
  CHECK(t.find("<(") != std::string::npos);  // a chain in the paper's notation
  CHECK(t.find("path from a root: static \"evil\" <b> -> (byte[] 0x11060)[3] -> (Map<K, \"V\"> 0x10080) (GC 6)") != std::string::npos);
}

TEST_CASE("HTML report: one self-contained page with its charts, names escaped", "[analysis][output]") {
  const TraceAnalysis a = awkward_trace();
  const std::string h = render_html(report_of(a));
  CHECK(h.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(h.find("</html>") != std::string::npos);
  std::size_t svgs = 0;
  for (std::size_t at = 0; (at = h.find("<svg", at)) != std::string::npos; ++at) ++svgs;
  CHECK(svgs == 6);  // cohort bytes, cohort objects, sizes, lifetimes, threads, replay
  CHECK(h.find("class=\"area\"") != std::string::npos);
  CHECK(h.find("class=\"bar\"") != std::string::npos);
  CHECK(h.find("class=\"alloc\"") != std::string::npos);
  CHECK(h.find("Cache.put,&quot;evil&quot; &lt;b&gt;&amp;@7") != std::string::npos);
  CHECK(h.find("<b>&") == std::string::npos);
  CHECK(h.find("static &quot;evil&quot; &lt;b&gt; -&gt; (byte[] 0x11060)[3]") != std::string::npos);  // the path
  CHECK(h.find("<b>") == std::string::npos);
  CHECK(h.find("<script") == std::string::npos);
  CHECK(h.find("http://") == h.find("http://www.w3.org/2000/svg"));  // nothing external but the SVG namespace
}

TEST_CASE("Perfetto export: Chrome trace events for GCs, counters and threads", "[analysis][output]") {
  const TraceAnalysis a = awkward_trace();
  const json doc = json::parse(render_perfetto(a, PerfettoOptions{"t", 4, 100}));
  REQUIRE(doc["traceEvents"].is_array());
  std::size_t gcs = 0, counters = 0, threads = 0;
  double last_gc = -1;
  for (const json& e : doc["traceEvents"]) {
    REQUIRE(e.contains("ph"));
    REQUIRE(e["pid"] == 1);
    const std::string ph = e["ph"];
    if (ph == "M") continue;
    REQUIRE(e["ts"].is_number());
    if (ph == "X" && e["cat"] == "gc") {
      ++gcs;
      CHECK(e["ts"].get<double>() >= last_gc);
      last_gc = e["ts"].get<double>();
      CHECK(e["dur"].get<double>() > 0);
      // The slice's args are the GC's record, as the JSON report writes it.
      const GcRecord& g = a.gcs.at(gcs - 1);
      CHECK(e["args"]["epoch"] == g.epoch);
      CHECK(e["args"]["marked_bits"] == g.marked_bits);
      CHECK(e["args"]["freed_objects"] == g.freed_objects);
      CHECK(e["args"]["live_bytes_after"] == g.live_bytes_after);
    } else if (ph == "X" && e["cat"] == "thread") {
      ++threads;
    } else if (ph == "C") {
      ++counters;
      CHECK(e["args"].is_object());
    }
  }
  CHECK(gcs == a.gcs.size());
  CHECK(threads == 2);
  CHECK(counters >= 2 * a.gcs.size());
}

}  // namespace test_report_outputs
