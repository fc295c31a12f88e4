// insn_bins: bins the instructions qemu-user executed into JIT code, barrier code and other, for
// scripts/jit_insn_ladder.sh. Built for the host by that script (it reads qemu's log, so it
// runs where qemu runs, not under it).
//
//   qemu-aarch64 -singlestep -d exec,nochain -D FIFO ... & insn_bins RANGES < FIFO
//
// Input: qemu's exec log, one "Trace CPU: HOSTPTR [CSBASE/PC/FLAGS/CFLAGS] ..." line per
// executed translation block; with -singlestep a block is one instruction. RANGES is the file
// jit_insn_ladder writes ("function BEGIN END NAME", "barrier BEGIN END NAME PC", hex), read
// at the end of the log, when the run that wrote it has exited. Output, one line:
//   jit N barrier N other N
// (barrier instructions are also JIT instructions).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

[[noreturn]] void die(const char* what, const char* detail) {
  std::fprintf(stderr, "insn_bins: %s%s\n", what, detail);
  std::exit(2);
}

using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

bool inside(const Ranges& sorted, std::uint64_t pc) {
  auto it = std::upper_bound(sorted.begin(), sorted.end(), std::make_pair(pc, UINT64_MAX));
  return it != sorted.begin() && pc < std::prev(it)->second;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) die("usage: insn_bins RANGES < qemu-exec-log", "");
  // Count per PC first: a few thousand distinct PCs, millions of lines.
  std::unordered_map<std::uint64_t, std::uint64_t> per_pc;
  char line[512];
  std::uint64_t lines = 0;
  while (std::fgets(line, sizeof line, stdin)) {
    if (std::strncmp(line, "Trace ", 6) != 0) continue;
    const char* open = std::strchr(line, '[');
    const char* slash = open ? std::strchr(open, '/') : nullptr;
    if (!slash) die("unexpected log line: ", line);
    char* end = nullptr;
    const std::uint64_t pc = std::strtoull(slash + 1, &end, 16);
    if (end == slash + 1 || *end != '/') die("unexpected log line: ", line);
    ++per_pc[pc];
    ++lines;
  }
  std::FILE* f = std::fopen(argv[1], "r");
  if (!f) die("cannot read the ranges file ", argv[1]);
  Ranges functions, barriers;
  char kind[16], name[256];
  unsigned long long b = 0, e = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "%15s %llx %llx %255s", kind, &b, &e, name) != 4 || b >= e)
      die("bad line in the ranges file: ", line);
    (std::strcmp(kind, "function") == 0 ? functions : barriers).emplace_back(b, e);
  }
  std::fclose(f);
  if (functions.empty()) die("no function ranges in ", argv[1]);
  std::sort(functions.begin(), functions.end());
  std::sort(barriers.begin(), barriers.end());
  std::uint64_t jit = 0, barrier = 0, other = 0;
  for (const auto& [pc, n] : per_pc) {
    if (inside(functions, pc)) {
      jit += n;
      if (inside(barriers, pc)) barrier += n;
    } else {
      other += n;
      if (inside(barriers, pc)) die("a barrier range lies outside every function in ", argv[1]);
    }
  }
  std::printf("jit %llu barrier %llu other %llu\n", static_cast<unsigned long long>(jit),
              static_cast<unsigned long long>(barrier), static_cast<unsigned long long>(other));
  return lines == 0 ? 1 : 0;
}
