// `objprof demo`: drives the Profiler by hand through the seeds' ListLeak scenario and prints
// its leak report. A stand-in runtime: a bump-pointer heap in real memory, a list of large
// nodes, one early node that is never touched again, a semi-space style collector that moves
// every survivor at each GC, and the access barrier on every node visit.
#include "command.h"
#include "leak_output.h"

#include <objprof/objprof.h>

#include <fmt/core.h>

#include <cstdlib>
#include <memory>
#include <vector>

namespace objprof::cli {
namespace {

struct DemoOptions {
  std::uint32_t nodes = 64;
  std::uint32_t leaked = 5;
  std::uint32_t node_size = 2048;
  std::uint32_t epochs = 12;
  std::uint32_t stale_after = 4;
  std::uint64_t min_size = 1024;
  std::string trace;
};

int run_demo(const DemoOptions& opt) {
  if (opt.leaked >= opt.nodes) {
    fmt::print(stderr, "objprof demo: --leaked must be below --nodes\n");
    return 2;
  }
  // Two semi-spaces in one profiled space, 8-byte aligned.
  // Page-rounded: aligned_alloc wants a size that is a multiple of the alignment.
  // Room for the list and one epoch of boxes (half the list's bytes).
  const std::size_t half = (std::size_t{opt.nodes} * (opt.node_size + opt.node_size / 2 + 64) + 2 * 4096) & ~std::size_t{4095};
  std::unique_ptr<std::byte, void (*)(void*)> heap(static_cast<std::byte*>(std::aligned_alloc(4096, 2 * half + 4096)), &std::free);
  const Address base = reinterpret_cast<Address>(heap.get());
  auto space = HeapSpace::make(base, base + 2 * half, 8, "semispace");
  if (!space.ok()) return fmt::print(stderr, "objprof demo: {}\n", space.error().message), 1;

  std::vector<LeakReport> online;
  std::vector<std::string> names;
  ProfilerOptions po;
  po.stale_after_epochs = opt.stale_after;
  po.min_tracked_size = opt.min_size;
  po.trace_path = opt.trace;
  po.on_leak_group = [&](const LeakGroup& g) { fmt::print("  [gc {:>2}] {}\n", g.epoch, format_leak_group(g)); };
  auto created = Profiler::create(std::move(po));
  if (!created.ok()) return fmt::print(stderr, "objprof demo: {}\n", created.error().message), 1;
  Profiler& prof = **created;
  const SpaceId sid = *prof.add_space(*space);
  (void)prof.define_type({1, "ListLeak$Node", opt.node_size, false});
  (void)prof.define_type({2, "java.lang.Integer", 16, false});
  (void)prof.define_site({100, 0x7a0010, "ListLeak.addNode", 14});
  (void)prof.define_site({101, 0x7a0040, "ListLeak.boxValue", 3});
  ThreadState& main = **prof.attach_thread(1, "main");
  const BarrierDescriptor& bd = prof.barrier_descriptor(sid);

  std::size_t from = 0, bump = 0;
  auto alloc = [&](std::uint32_t site, std::uint32_t type, std::size_t size) {
    const Address a = base + from * half + bump;
    bump += (size + 7) & ~std::size_t{7};
    prof.on_alloc(main, site, type, a, size);
    return a;
  };
  fmt::print("objprof demo: ListLeak with {} nodes of {} bytes; node {} is never used after it is added\n",
             opt.nodes, opt.node_size, opt.leaked);
  fmt::print("              GC_K = {} epochs, tracking objects >= {} bytes, {} GCs, copying collector\n\n",
             opt.stale_after, opt.min_size, opt.epochs);
  std::vector<Address> nodes;
  for (std::uint32_t i = 0; i < opt.nodes; ++i) {
    nodes.push_back(alloc(100, 1, opt.node_size));
    access<CountingBarrier>(main, bd, nodes.back());
  }
  for (std::uint32_t e = 0; e < opt.epochs; ++e) {
    // The mutator walks the list (every node but the leaked one) and boxes values, which die
    // young: as many bytes per epoch as half the list, so the epochs are a program's progress
    // (the stale check also wants the node idle while the thread allocated as much as in its
    // busiest epoch, the first).
    for (int pass = 0; pass < 3; ++pass)
      for (std::uint32_t i = 0; i < opt.nodes; ++i)
        if (i != opt.leaked) {
          access<CountingBarrier>(main, bd, nodes[i]);  // node.value
          access<CountingBarrier>(main, bd, nodes[i]);  // node.next: a repeat, the cache skips it
        }
    const std::size_t boxes = std::size_t{opt.nodes} * opt.node_size / 32;
    for (std::size_t i = 0; i < boxes; ++i) access<CountingBarrier>(main, bd, alloc(101, 2, 16));
    // Copying GC: survivors (the list) move to the other semi-space; boxes die.
    if (!prof.gc_begin(GcKind::kCopying).ok()) return 1;
    from ^= 1;
    bump = 0;
    for (auto& n : nodes) {
      const Address to = base + from * half + bump;
      bump += opt.node_size;
      prof.on_move(n, to);
      n = to;
    }
    if (auto st = prof.gc_end(); !st.ok()) return fmt::print(stderr, "objprof demo: {}\n", st.error().message), 1;
  }
  if (auto st = prof.finish(); !st.ok()) return fmt::print(stderr, "objprof demo: trace: {}\n", st.error().message), 1;

  const ProfilerStats s = prof.stats();
  fmt::print("\nsummary: {} GCs, {} objects ({} bytes) allocated, {} tracked, {} bits harvested\n", s.epoch,
             s.objects_allocated, s.bytes_allocated, s.objects_tracked, s.bits_harvested);
  fmt::print("barriers: {} executed, {} cache hits ({:.1f}%), {} marks\n", s.barriers_executed, s.barrier_cache_hits,
             s.barriers_executed ? 100.0 * static_cast<double>(s.barrier_cache_hits) / static_cast<double>(s.barriers_executed) : 0.0,
             s.bitmap_marks);
  if (!opt.trace.empty()) fmt::print("trace: {} ({} bytes, {} chunks)\n", opt.trace, s.trace_bytes, s.trace_chunks);
  fmt::print("\n{}", format_leak_groups(prof.possible_leak_groups(), 20));
  return 0;
}

const RegisterCommand kDemo([](CLI::App& app) -> std::function<int()> {
  auto opt = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand("demo", "Profile a hand-driven ListLeak scenario and print its leak report");
  cmd->add_option("--nodes", opt->nodes, "list length")->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--leaked", opt->leaked, "index of the node that is never used again");
  cmd->add_option("--node-size", opt->node_size, "bytes per node")->check(CLI::Range(16u, 1u << 24));
  cmd->add_option("--gcs", opt->epochs, "number of GCs")->check(CLI::Range(1u, 100000u));
  cmd->add_option("--stale-after", opt->stale_after, "GC_K: epochs without access before a report")->check(CLI::Range(1u, 1000000u));
  cmd->add_option("--min-size", opt->min_size, "track objects of at least this many bytes");
  cmd->add_option("--trace", opt->trace, "write the binary trace to this file");
  return [opt] { return run_demo(*opt); };
});

}  // namespace
}  // namespace objprof::cli
