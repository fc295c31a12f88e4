// `objprof elim`: run a redundant-barrier elimination pass over IR text files (or a generated
// corpus), print per-function and total counts, optionally the annotated IR, and optionally
// check every function with the soundness checker (exit 1 on a violation, 2 on bad input).
#include "command.h"

#include <objprof/ir/class_archive.h>

#include "objprof/ir/checker.h"
#include "objprof/ir/elim.h"
#include "objprof/ir/generate.h"
#include "objprof/ir/jvm_import.h"
#include "objprof/ir/jvm_program.h"
#include "objprof/ir/text.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace objprof::cli {
namespace {

struct ElimArgs {
  std::vector<std::string> files;
  std::string pass = "global";
  std::string safepoints = "exact";
  bool annotate = false;
  std::uint32_t check = 0;
  std::uint64_t seed = 1;
  bool json = false;
  std::string generate;  // SEED:COUNT:BLOCKS
  std::string shape = "mixed";
  std::uint32_t regs = 8;
  std::vector<std::string> assume;   // allocation-marks, receiver, root-marks
  std::vector<std::string> context;  // class inputs that join the program but are not reported
};

struct Totals {
  std::size_t functions = 0, accesses = 0, kept = 0, removed = 0, violations = 0;
};

bool parse_generate(const std::string& spec, std::uint64_t* seed, std::uint32_t* count, std::uint32_t* blocks) {
  unsigned long long s = 0, c = 0, b = 0;
  char extra = 0;
  if (std::sscanf(spec.c_str(), "%llu:%llu:%llu%c", &s, &c, &b, &extra) != 3) return false;
  if (c == 0 || c > 1000000 || b == 0 || b > 10000000) return false;
  *seed = s;
  *count = static_cast<std::uint32_t>(c);
  *blocks = static_cast<std::uint32_t>(b);
  return true;
}

int run_elim_command(const ElimArgs& args) {
  ir::ElimOptions options;
  options.pass = args.pass == "none" ? ir::PassKind::kNone : args.pass == "paper" ? ir::PassKind::kPaper : ir::PassKind::kGlobal;
  options.safepoints = args.safepoints == "paper" ? ir::SafepointMode::kPaper : ir::SafepointMode::kExact;
  const bool summaries = args.safepoints == "summaries";
  for (const std::string& a : args.assume) {
    options.allocation_marks |= a == "allocation-marks";
    options.receiver_marked |= a == "receiver";
    options.roots_marked |= a == "root-marks";
  }

  // Inputs: (label, module) pairs; imported classes are kept whole (with their hierarchy) so
  // that --safepoints=summaries can see the program they form.
  std::vector<std::pair<std::string, ir::Module>> owned;
  std::vector<std::string> class_labels;
  std::vector<ir::ClassImport> classes;
  std::vector<std::string> errors;
  auto add_class = [&](const std::string& label, ir::ClassImport imported) {
    for (const std::string& skipped : imported.skipped)
      std::fprintf(stderr, "objprof elim: note: %s: skipped %s\n", label.c_str(), skipped.c_str());
    class_labels.push_back(label);
    classes.push_back(std::move(imported));
  };
  if (!args.generate.empty()) {
    std::uint64_t seed = 0;
    std::uint32_t count = 0, blocks = 0;
    if (!parse_generate(args.generate, &seed, &count, &blocks)) {
      std::fprintf(stderr, "objprof elim: error: --generate wants SEED:COUNT:BLOCKS (e.g. 1:100:50), got '%s'\n",
                   args.generate.c_str());
      return 2;
    }
    ir::GenOptions g;
    g.blocks = blocks;
    g.regs = args.regs;
    g.shape = args.shape == "structured" ? ir::CfgShape::kStructured
              : args.shape == "unstructured" ? ir::CfgShape::kUnstructured
                                              : ir::CfgShape::kMixed;
    owned.emplace_back(fmt::format("generated:{}", args.generate), ir::generate_module(seed, count, g));
  }
  std::vector<std::string> files = args.files;
  files.insert(files.end(), args.context.begin(), args.context.end());
  std::size_t reported_classes = 0;
  for (std::size_t fi = 0; fi < files.size(); ++fi) {
    const std::string& file = files[fi];
    if (fi == args.files.size()) reported_classes = classes.size();
    auto ends_with = [&](std::string_view suffix) {
      return file.size() >= suffix.size() && file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with(".jar") || ends_with(".jmod")) {
      auto entries = ir::read_class_archive(file);
      if (!entries) {
        errors.push_back(entries.error().message);
        continue;
      }
      for (const ir::ArchiveEntry& entry : *entries) {
        const std::string label = fmt::format("{}!{}", file, entry.name);
        auto imported = ir::import_class(entry.bytes);
        if (!imported) {
          errors.push_back(fmt::format("{}: {}", label, imported.error().message));
          continue;
        }
        add_class(label, std::move(imported).value());
      }
      continue;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      errors.push_back(fmt::format("{}: cannot open file", file));
      continue;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    if (ends_with(".class")) {
      auto imported = ir::import_class(ss.str());
      if (!imported) {
        errors.push_back(fmt::format("{}: {}", file, imported.error().message));
        continue;
      }
      add_class(file, std::move(imported).value());
      continue;
    }
    if (fi >= args.files.size()) {
      errors.push_back(fmt::format("{}: --context takes .class, .jar or .jmod files", file));
      continue;
    }
    auto parsed = ir::parse_module(ss.str(), file);
    if (!parsed) {
      errors.push_back(parsed.error().message);
      continue;
    }
    owned.emplace_back(file, std::move(parsed).value());
  }
  if (args.context.empty()) reported_classes = classes.size();

  std::vector<std::pair<std::string, const ir::Module*>> inputs;
  for (const auto& [label, module] : owned) inputs.emplace_back(label, &module);
  // The classes as one program: class-hierarchy resolution, and with summaries, `.nogc` on
  // the calls that cannot reach a GC point; the checker then runs the real callees.
  std::optional<ir::JvmProgram> program;
  std::optional<ir::GcSummaryStats> summary_stats;
  std::size_t calls_marked = 0;
  if (summaries) {
    program.emplace(std::move(classes));
    summary_stats = program->apply_gc_summaries();
    if (options.pass == ir::PassKind::kGlobal) calls_marked = program->apply_return_summaries(options);
    for (std::size_t c = 0; c < reported_classes; ++c) inputs.emplace_back(class_labels[c], &program->classes()[c].module);
  } else {
    for (std::size_t c = 0; c < reported_classes; ++c) inputs.emplace_back(class_labels[c], &classes[c].module);
  }

  Totals totals;
  nlohmann::json jfunctions = nlohmann::json::array();
  ir::FunctionAnalyses workspace;  // one for all functions: the analyses reuse their arrays
  for (const auto& [label, module] : inputs) {
    for (const ir::Function& f : module->functions) {
      auto result = ir::run_elim(f, options, module, workspace);
      if (!result) {
        errors.push_back(fmt::format("{}: {}", label, result.error().message));
        continue;
      }
      const ir::ElimResult& r = *result;
      ++totals.functions;
      totals.accesses += r.accesses.size();
      totals.kept += r.num_kept();
      totals.removed += r.num_removed();
      nlohmann::json jf = {{"input", label},
                           {"function", f.name},
                           {"blocks", f.blocks.size()},
                           {"instructions", f.num_instrs()},
                           {"accesses", r.accesses.size()},
                           {"kept", r.num_kept()},
                           {"removed", r.num_removed()}};
      std::string check_text;
      if (args.check > 0) {
        ir::CheckOptions co = ir::check_options_for(r, args.check, args.seed);
        if (program) co.calls = &*program;
        ir::CheckReport report = ir::check_function(f, r, co);
        jf["check"] = {{"paths", report.paths}, {"accesses", report.accesses}, {"gcs", report.gcs}, {"ok", report.ok()}};
        if (!report.ok()) {
          ++totals.violations;
          std::string v = ir::format_violation(f, *report.violation);
          jf["check"]["violation"] = v;
          check_text = fmt::format("  VIOLATION: {}\n", v);
        } else {
          check_text = fmt::format("  check: {} paths, {} accesses, {} GCs, no violation\n", report.paths, report.accesses, report.gcs);
        }
      }
      if (args.annotate && args.json) {
        nlohmann::json sites = nlohmann::json::array();
        for (const ir::AccessDecision& d : r.accesses) {
          nlohmann::json js = {{"site", d.site},   {"block", f.blocks[d.block].name}, {"register", d.reg},
                               {"operand", d.operand}, {"kept", d.kept},           {"reason", ir::reason_name(d.reason)}};
          if (d.because != ir::kNoSite) js["because"] = d.because;
          sites.push_back(std::move(js));
        }
        jf["sites"] = std::move(sites);
      }
      if (args.json) {
        jfunctions.push_back(std::move(jf));
        continue;
      }
      std::cout << fmt::format("{}: func {}: {} accesses, {} kept, {} removed\n", label, f.name, r.accesses.size(),
                               r.num_kept(), r.num_removed())
                << check_text;
      if (args.annotate) {
        ir::PrintOptions po;
        po.annotate = [&r](const ir::Function&, ir::BlockId b, std::size_t i) {
          return ir::annotate_instr(r, b, static_cast<std::uint32_t>(i));
        };
        std::cout << ir::print_function(f, po);
      }
    }
  }
  for (const std::string& e : errors) std::fprintf(stderr, "objprof elim: error: %s\n", e.c_str());
  if (args.json) {
    nlohmann::json out = {{"pass", args.pass},
                          {"safepoints", args.safepoints},
                          {"assume", args.assume},
                          {"functions", std::move(jfunctions)},
                          {"totals",
                           {{"functions", totals.functions},
                            {"accesses", totals.accesses},
                            {"kept", totals.kept},
                            {"removed", totals.removed},
                            {"violations", totals.violations}}},
                          {"errors", errors}};
    if (summary_stats) {
      out["summaries"] = {{"functions", summary_stats->functions},
                          {"functions_no_gc", summary_stats->functions_no_gc},
                          {"calls", summary_stats->calls},
                          {"calls_resolved", summary_stats->calls_resolved},
                          {"calls_no_gc", summary_stats->calls_no_gc},
                          {"calls_returning_marked", calls_marked}};
    }
    std::cout << out.dump(2) << "\n";
  } else {
    if (summary_stats) {
      std::cout << fmt::format(
          "summaries: {} of {} functions cannot GC; {} of {} calls resolved, {} cannot GC, {} return marked objects\n",
          summary_stats->functions_no_gc, summary_stats->functions, summary_stats->calls_resolved, summary_stats->calls,
          summary_stats->calls_no_gc, calls_marked);
    }
    std::cout << fmt::format("total ({} pass, {} safepoints): {} functions, {} accesses, {} kept, {} removed ({:.1f}%)", args.pass,
                             args.safepoints, totals.functions, totals.accesses, totals.kept, totals.removed,
                             totals.accesses ? 100.0 * static_cast<double>(totals.removed) / static_cast<double>(totals.accesses) : 0.0);
    if (args.check > 0) std::cout << fmt::format(", {} violations", totals.violations);
    std::cout << "\n";
  }
  if (!errors.empty()) return 2;
  return totals.violations > 0 ? 1 : 0;
}

const RegisterCommand kRegisterElim([](CLI::App& app) -> std::function<int()> {
  auto args = std::make_shared<ElimArgs>();
  CLI::App* sub = app.add_subcommand("elim", "Run redundant-barrier elimination over IR files (docs/elimination.md)");
  sub->add_option("files", args->files, "IR text files (docs/ir-format.md), JVM .class files, or .jar/.jmod archives");
  sub->add_option("--pass", args->pass, "none | paper | global")->check(CLI::IsMember({"none", "paper", "global"}));
  sub->add_option("--safepoints", args->safepoints,
                  "exact: every call may GC unless marked .nogc; summaries: as exact, but calls whose callees (class "
                  "hierarchy of the classes given) cannot reach a GC point keep availability; paper: ignore GCs")
      ->check(CLI::IsMember({"exact", "summaries", "paper"}));
  sub->add_option("--assume", args->assume,
                  "what the VM guarantees: allocation-marks (the allocator marks new objects), receiver (a method is "
                  "entered with its receiver marked by the caller's invoke), root-marks (each GC marks the objects its "
                  "frames' live references hold, so GC points end no availability)")
      ->delimiter(',')
      ->check(CLI::IsMember({"allocation-marks", "receiver", "root-marks"}));
  sub->add_option("--context", args->context,
                  "classes (.class/.jar/.jmod) that belong to the program for --safepoints=summaries but are not reported");
  sub->add_flag("--annotate", args->annotate, "print the IR with every access marked kept or removed (and why)");
  sub->add_option("--check", args->check, "run the soundness checker with N random paths per function");
  sub->add_option("--seed", args->seed, "checker seed");
  sub->add_flag("--json", args->json, "machine-readable output");
  sub->add_option("--generate", args->generate, "also run on a generated corpus SEED:COUNT:BLOCKS");
  sub->add_option("--shape", args->shape, "generated CFG shape: structured | unstructured | mixed")
      ->check(CLI::IsMember({"structured", "unstructured", "mixed"}));
  sub->add_option("--regs", args->regs, "registers per generated function")->check(CLI::Range(2u, 4096u));
  return [args] {
    if (args->files.empty() && args->generate.empty()) {
      std::fprintf(stderr, "objprof elim: error: give IR files or --generate=SEED:COUNT:BLOCKS\n");
      return 2;
    }
    return run_elim_command(*args);
  };
});

}  // namespace
}  // namespace objprof::cli
