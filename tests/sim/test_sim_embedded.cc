// The workloads compiled into objprof_sim are byte-for-byte the files of sim/workloads, every
// shipped workload is among them, and their `; @size` / `; @heap` directives are read the same
// way from either copy.
#include "sim/embedded_workloads.h"
#include "sim/workloads.h"

#include <objprof/ir/text.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace objprof::sim::test_sim_embedded {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("embedded workloads equal the files on disk and cover every shipped workload", "[sim]") {
  std::set<std::string> embedded;
  for (const EmbeddedWorkload& e : embedded_workloads()) {
    INFO(e.name);
    embedded.insert(std::string(e.name));
    auto path = find_workload(std::string(e.name));
    REQUIRE(path.ok());
    CHECK(read_file(*path) == e.text);
    auto module = ir::parse_module(std::string(e.text), std::string(e.name));
    CHECK(module.ok());
  }
  for (const std::string& name : workload_names()) CHECK(embedded.count(name) == 1);
}

TEST_CASE("workload directives: size and heap defaults, malformed size is an error", "[sim]") {
  CHECK(workload_directive("; x\n; @size 64\n; @heap 256K\r\nfunc", "size") == "64");
  CHECK(workload_directive("; @heap 256K\r\n", "heap") == "256K");
  CHECK(workload_directive("; @sizes 3\n", "size").empty());
  CHECK(workload_directive("", "size").empty());
  auto wl = load_workload("listleak");
  REQUIRE(wl.ok());
  CHECK(wl->default_size == 2000);
  CHECK(wl->default_heap == "4M");

  const std::string path = (std::filesystem::temp_directory_path() / "objprof-bad-size.ir").string();
  {
    std::ofstream out(path);
    out << "; @size lots\nfunc main() regs 1 {\nentry:\n  ret\n}\n";
  }
  auto bad = load_workload(path);
  std::filesystem::remove(path);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("@size") != std::string::npos);
}

}  // namespace objprof::sim
