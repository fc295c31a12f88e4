// The objprof CLI is one binary with subcommands; each subcommand lives in its own file and
// registers itself here at static-initialisation time, so adding one touches no shared list.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace objprof::cli {

// Adds a subcommand to `app`. Returns the callback run when that subcommand was chosen; the
// callback's return value is the process exit code.
using CommandFactory = std::function<std::function<int()>(CLI::App& app)>;

std::vector<CommandFactory>& command_factories();

struct RegisterCommand {
  explicit RegisterCommand(CommandFactory factory) { command_factories().push_back(std::move(factory)); }
};

}  // namespace objprof::cli
