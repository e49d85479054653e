// Status and Result<T>: how every StripeFS API reports failure.
//
// A Status is a POSIX errno plus an optional message; OK is code 0 and costs
// nothing (no allocation). Result<T> holds either a T or a non-OK Status, shaped
// like std::expected. No exceptions cross StripeFS APIs. ToErrno() at the FUSE
// edge is simply code(): codes *are* errnos, so the mapping lives here, once.
#pragma once

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace sfs {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(int code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }
  static Status Errno(int code, std::string message = {}) { return Status(code, std::move(message)); }
  // From the current errno, prefixed with what was being done.
  static Status FromErrno(std::string_view what);

  bool ok() const { return code_ == 0; }
  int code() const { return code_; }
  const std::string& message() const { return message_; }
  // "ENOENT: message" — one line, for logs and CLI errors.
  std::string ToString() const;

 private:
  int code_ = 0;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}         // NOLINT; REQUIRES: !status.ok()
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

// Name of an errno value ("ENOENT"), or its number.
std::string ErrnoName(int code);

}  // namespace sfs

#define SFS_CONCAT_INNER(a, b) a##b
#define SFS_CONCAT(a, b) SFS_CONCAT_INNER(a, b)

#define SFS_RETURN_IF_ERROR(expr)          \
  do {                                     \
    ::sfs::Status sfs_st_ = (expr);        \
    if (!sfs_st_.ok()) return sfs_st_;     \
  } while (0)

#define SFS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#define SFS_ASSIGN_OR_RETURN(lhs, expr) \
  SFS_ASSIGN_OR_RETURN_IMPL(SFS_CONCAT(sfs_res_, __LINE__), lhs, expr)

// A broken invariant: abort with a message. Never used for bad input.
#define SFS_CHECK(cond)                                                   \
  do {                                                                    \
    if (!(cond)) ::sfs::CheckFailed(__FILE__, __LINE__, #cond);           \
  } while (0)

namespace sfs {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond);
}
