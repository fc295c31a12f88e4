// Private helpers shared by the x86_64 and arm64 emitters: asmjit errors as objprof Status,
// and the register-set validation both backends do before emitting anything.
#pragma once

#include "objprof/result.h"

#include <asmjit/core.h>

#include <cstdint>
#include <string>

namespace objprof::backends::detail {

inline Status asmjit_status(asmjit::Error err, const char* what) {
  if (err == asmjit::kErrorOk) return Status::Ok();
  return make_error(ErrorCode::kInvalidArgument,
                    std::string("asmjit refused ") + what + ": " + asmjit::DebugUtils::errorAsString(err));
}

// Propagates an asmjit error from one emitted instruction as a Status.
#define OBJPROF_EMIT(expr)                                                          \
  do {                                                                              \
    if (::asmjit::Error objprof_emit_err_ = (expr); objprof_emit_err_ != ::asmjit::kErrorOk) \
      return ::objprof::backends::detail::asmjit_status(objprof_emit_err_, #expr);  \
  } while (0)

// Collects the registers a barrier reads and writes and refuses aliasing: a scratch register
// that is also the object, thread, descriptor or cache register would corrupt them. Register
// ids identify physical (0..31) and virtual (>= 256, asmjit Compiler) registers alike.
class RegisterSet {
 public:
  // Returns false (and records why) if `id` was already added.
  bool add(std::uint32_t id, const char* role) {
    for (int i = 0; i < n_; ++i) {
      if (ids_[i] == id) {
        error_ = std::string(role) + " register aliases the " + roles_[i] + " register";
        return false;
      }
    }
    ids_[n_] = id;
    roles_[n_] = role;
    ++n_;
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  std::uint32_t ids_[8] = {};
  const char* roles_[8] = {};
  int n_ = 0;
  std::string error_;
};

}  // namespace objprof::backends::detail
