// Errors are values in objprof's API: configuration and I/O calls return Result<T> (or Status)
// with a code and a readable message instead of throwing. Hot paths never fail.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace objprof {

enum class ErrorCode {
  kInvalidArgument,   // bad option or parameter, out-of-range address
  kOutOfRange,
  kIo,                // the OS refused a read/write/mmap
  kCorrupt,           // a trace or file failed validation (bad magic, CRC, record)
  kTruncated,         // input ends early; what came before it is usable
  kUnsupported,
  kProtocol,          // hooks called out of order (e.g. gc_end without gc_begin)
  kParse,             // text input (IR, options) does not parse
};

const char* error_code_name(ErrorCode code) noexcept;

struct Error {
  ErrorCode code;
  std::string message;
};

// Result<T>: a T or an Error. Result<void> is spelled Status.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  static Status Ok() { return {}; }

  bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_{ErrorCode::kInvalidArgument, {}};
  bool ok_ = true;
};

inline Error make_error(ErrorCode code, std::string message) { return Error{code, std::move(message)}; }

inline const char* error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kOutOfRange: return "out of range";
    case ErrorCode::kIo: return "I/O error";
    case ErrorCode::kCorrupt: return "corrupt input";
    case ErrorCode::kTruncated: return "truncated input";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kProtocol: return "protocol error";
    case ErrorCode::kParse: return "parse error";
  }
  return "unknown error";
}

}  // namespace objprof

// Returns the error of a Status/Result expression from the enclosing function.
#define OBJPROF_RETURN_IF_ERROR(expr)                     \
  do {                                                    \
    auto objprof_status_ = (expr);                        \
    if (!objprof_status_.ok()) return objprof_status_.error(); \
  } while (0)
