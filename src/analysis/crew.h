// Crew (private): the threads that apply the analyzer's shards, pulling work rather than
// owning it, so that no thread ever waits for one the OS has descheduled.
//
// A phase is a job over `tasks` indices (the back's shards). The thread that opens it (the
// back) takes indices from a shared counter until none is left, and so does every other
// thread that joins: the crew's own helpers, and the trace reader whenever it would otherwise
// wait for an empty batch (analyzer.cc). analyze() with N workers therefore runs N threads in
// all, the reader among them, and a phase finishes as fast as the threads that are actually
// running can take its tasks. Between phases, a joining thread does background work instead
// (set_background): the back's queued batches, which need no phase and so no barrier.
//
// Plain std::threads and C++20 atomic wait/notify rather than oneTBB tasks: ThreadSanitizer
// sees every synchronisation (Debian's oneTBB is not instrumented).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace objprof::analysis::internal {

class Crew {
 public:
  // Starts `helpers` threads of its own (0: only threads that join do the work).
  explicit Crew(unsigned helpers) {
    for (unsigned i = 0; i < helpers; ++i) helpers_.emplace_back([this] { serve(); });
  }
  ~Crew() {
    stop_.store(1);
    poke();
    for (std::thread& t : helpers_) t.join();
  }
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;

  // Runs job(i) for every i in [0, tasks) on this thread and whichever threads join, and
  // returns when all have returned. One phase at a time; a job must not throw.
  void run(unsigned tasks, const std::function<void(unsigned)>& job) {
    job_ = &job;
    tasks_ = tasks;
    next_.store(0);
    done_.store(0);
    open_.store(1);
    poke();
    work();
    open_.store(0);
    // Every task is finished, and nobody is still looking at this phase's counters.
    for (std::uint32_t d; (d = done_.load()) != tasks;) done_.wait(d);
    for (std::uint32_t a; (a = inside_.load()) != 0;) inside_.wait(a);
  }

  // Joins the open phase, if any, until its tasks are all taken; with no phase open, does one
  // piece of the background work, if there is any. True if it did something.
  bool help() {
    inside_.fetch_add(1);
    bool took = false;
    if (open_.load() != 0) took = work();
    else if (const std::function<bool()>* background = background_.load()) took = (*background)();
    if (inside_.fetch_sub(1) == 1) inside_.notify_all();
    return took;
  }

  // Work that a joining thread does between phases: `work` does one piece of it and says
  // whether there was one (the back's queued batches, analyzer_back.h). Null: none. Returns
  // once no thread still runs the previous one, so its owner may then go away.
  void set_background(const std::function<bool()>* work) {
    background_.store(work);
    for (std::uint32_t a; (a = inside_.load()) != 0;) inside_.wait(a);
  }

  // Waiting for work: read signal() first, check for work, then wait(that value); it returns
  // once a phase has opened or someone poked since.
  std::uint32_t signal() const noexcept { return signal_.load(); }
  void wait(std::uint32_t seen) const noexcept { signal_.wait(seen); }
  void poke() noexcept {
    signal_.fetch_add(1);
    signal_.notify_all();
  }

 private:
  bool work() {
    bool took = false;
    for (std::uint32_t i; (i = next_.fetch_add(1)) < tasks_;) {
      (*job_)(i);
      took = true;
      if (done_.fetch_add(1) + 1 == tasks_) done_.notify_all();
    }
    return took;
  }
  void serve() {
    for (;;) {
      const std::uint32_t seen = signal();
      if (stop_.load() != 0) return;
      if (!help()) wait(seen);
    }
  }

  std::vector<std::thread> helpers_;
  const std::function<void(unsigned)>* job_ = nullptr;
  std::uint32_t tasks_ = 0;
  // Sequentially consistent throughout: a joiner raises inside_ and then reads open_, the
  // opener clears open_ and then waits for inside_ to drop, so no joiner can still be in a
  // phase that run() has returned from.
  std::atomic<std::uint32_t> next_{0}, done_{0}, inside_{0}, signal_{0};
  std::atomic<std::uint32_t> open_{0}, stop_{0};  // words, not bytes: qemu-user emulates byte atomics slowly
  std::atomic<const std::function<bool()>*> background_{nullptr};
};

}  // namespace objprof::analysis::internal
