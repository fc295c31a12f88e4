// build/bin/objprof: the objprof command-line tool. Subcommands register themselves
// (command.h); main only parses and dispatches.
#include "command.h"

#include <cstdio>
#include <exception>

namespace objprof::cli {
std::vector<CommandFactory>& command_factories() {
  static std::vector<CommandFactory> factories;
  return factories;
}
}  // namespace objprof::cli

int main(int argc, char** argv) {
  CLI::App app{"objprof: object-access profiler for managed runtimes"};
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, std::function<int()>>> commands;
  for (auto& factory : objprof::cli::command_factories()) {
    std::size_t before = app.get_subcommands({}).size();
    auto run = factory(app);
    auto subs = app.get_subcommands({});
    if (subs.size() > before) commands.emplace_back(subs.back(), std::move(run));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, run] : commands) {
    if (sub->parsed()) {
      try {
        return run();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "objprof %s: error: %s\n", sub->get_name().c_str(), e.what());
        return 1;
      }
    }
  }
  return 2;
}
