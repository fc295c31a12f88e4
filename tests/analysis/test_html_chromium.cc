// End to end through the CLI, then the HTML report in headless Chromium: `objprof report` on a
// listleak trace ranks the leaking site first; `--format=html` writes a page that Chromium
// loads with no console error, whose DOM holds the charts (SVG elements), and whose
// screenshot is not blank (much larger than a blank page's at the same size).
//
// Hidden tag: catch_discover_tests skips it; tests/CMakeLists.txt registers it for native,
// non-sanitizer builds, where scripts/setup.sh installs chromium. It fails, it does not skip,
// when chromium or the CLI is missing there.
#include "sim/heap.h"
#include "sim/interp.h"
#include "sim/workloads.h"

#include <objprof/profiler.h>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace test_html_chromium {

using namespace objprof;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string chromium() {
  if (const char* c = std::getenv("OBJPROF_CHROMIUM")) return c;
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (::access(c, X_OK) == 0) return c;
  return {};
}

// Headless Chromium with what a container needs (root: no sandbox; small /dev/shm).
std::string browser_cmd(const std::string& bin, const std::string& args) {
  return "timeout 180 " + bin + " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run " +
         "--hide-scrollbars --enable-logging=stderr --v=0 " + args;
}

// Any console message: the page has no script, so whatever reaches the console (an error,
// a failed resource, an exception) is a defect. Chromium's headless log marks every console
// message "CONSOLE", whatever its level.
bool has_console_message(const std::string& log) {
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos) return true;
  return false;
}

void write_listleak_trace(const std::string& path) {
  auto wl = sim::load_workload("listleak");
  REQUIRE(wl.ok());
  ProfilerOptions po;
  po.trace_path = path;
  po.default_leak_printer = false;
  po.on_leak = {};
  auto prof = Profiler::create(std::move(po));
  REQUIRE(prof.ok());
  sim::HeapOptions ho;
  ho.heap_bytes = 1 << 20;
  auto heap = sim::Heap::create(ho, prof->get());
  REQUIRE(heap.ok());
  sim::InterpOptions io;
  io.size = 600;
  auto interp = sim::Interpreter::create(wl->module, **heap, prof->get(), io);
  REQUIRE(interp.ok());
  REQUIRE((*interp)->run("main").ok());
  REQUIRE((*prof)->finish().ok());
}

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (std::uint32_t{static_cast<unsigned char>(s[at])} << 24) | (std::uint32_t{static_cast<unsigned char>(s[at + 1])} << 16) |
         (std::uint32_t{static_cast<unsigned char>(s[at + 2])} << 8) | static_cast<unsigned char>(s[at + 3]);
}

}  // namespace

TEST_CASE("HTML report renders in headless Chromium with its charts and no console error", "[.chromium]") {
  const std::string bin = chromium();
  if (bin.empty()) FAIL("chromium not found (scripts/setup.sh installs it; or set OBJPROF_CHROMIUM)");
  const std::string cli = std::string(OBJPROF_BIN_DIR) + "/objprof";
  if (::access(cli.c_str(), X_OK) != 0) FAIL("the objprof CLI is not built: " << cli);
  const fs::path dir = fs::temp_directory_path() / ("objprof-html-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string trace = (dir / "listleak.trace").string();
  write_listleak_trace(trace);

  // The acceptance check through the CLI: the leaking site (main, bci 4) is ranked first.
  REQUIRE(sh(cli + " report " + trace + " --no-progress --top=3 > " + (dir / "report.txt").string()) == 0);
  const std::string text = slurp(dir / "report.txt");
  const std::size_t leaks = text.find("Possible leaks");
  REQUIRE(leaks != std::string::npos);
  CHECK(text.find("  1  main@4", leaks) != std::string::npos);

  const fs::path html = dir / "report.html";
  REQUIRE(sh(cli + " report " + trace + " --format=html --no-progress --out=" + html.string()) == 0);
  REQUIRE(fs::file_size(html) > 10000);

  // DOM after load: every chart is there.
  const fs::path dom = dir / "dom.html", log = dir / "chromium.log";
  REQUIRE(sh(browser_cmd(bin, "--virtual-time-budget=3000 --dump-dom file://" + html.string()) + " > " + dom.string() + " 2> " +
             log.string()) == 0);
  const std::string d = slurp(dom);
  std::size_t svgs = 0;
  for (std::size_t at = 0; (at = d.find("<svg", at)) != std::string::npos; ++at) ++svgs;
  CHECK(svgs == 6);
  CHECK(d.find("class=\"area\"") != std::string::npos);   // cohort and thread stacks
  CHECK(d.find("class=\"bar\"") != std::string::npos);    // size and lifetime histograms
  CHECK(d.find("class=\"alloc\"") != std::string::npos);  // heap replay
  CHECK(d.find("main@4") != std::string::npos);
  const std::string l = slurp(log);
  INFO(l);
  CHECK_FALSE(has_console_message(l));

  // The detector itself sees a console error, and an uncaught exception, each on its own.
  for (const char* script : {"console.error('objprof-probe');", "undefined_fn();"}) {
    const fs::path bad = dir / "bad.html", bad_log = dir / "bad.log";
    std::ofstream(bad) << "<!DOCTYPE html><html><body><script>" << script << "</script></body></html>";
    sh(browser_cmd(bin, "--virtual-time-budget=2000 --dump-dom file://" + bad.string()) + " > /dev/null 2> " + bad_log.string());
    INFO(script);
    CHECK(has_console_message(slurp(bad_log)));
  }

  // Screenshots: the report against a blank page of the same size.
  const fs::path shot = dir / "report.png", blank_html = dir / "blank.html", blank_shot = dir / "blank.png";
  std::ofstream(blank_html) << "<!DOCTYPE html><html><body></body></html>";
  REQUIRE(sh(browser_cmd(bin, "--window-size=1200,2400 --screenshot=" + shot.string() + " file://" + html.string()) + " 2> /dev/null") == 0);
  REQUIRE(sh(browser_cmd(bin, "--window-size=1200,2400 --screenshot=" + blank_shot.string() + " file://" + blank_html.string()) + " 2> /dev/null") == 0);
  const std::string png = slurp(shot), blank = slurp(blank_shot);
  REQUIRE(png.size() > 24);
  CHECK(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  CHECK(be32(png, 16) == 1200);  // IHDR width and height
  CHECK(be32(png, 20) == 2400);
  INFO("report.png " << png.size() << " bytes, blank.png " << blank.size() << " bytes");
  CHECK(png.size() > 8 * blank.size());
  fs::remove_all(dir);
}

}  // namespace test_html_chromium
