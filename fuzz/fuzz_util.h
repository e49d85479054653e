// Helpers shared by the libFuzzer targets: a scratch directory that lives as
// long as the fuzzing process, and the split of one input into a request's
// payload and bulk. Fuzz-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/rpc/rpc.h"

namespace sfs::fuzz {

// A fresh directory under $TMPDIR (or /tmp), made once per process and left
// for the OS to clean (libFuzzer exits without running destructors).
inline const std::string& ScratchDir(const char* name) {
  static std::string dir = [name] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + name + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    return tmpl;
  }();
  return dir;
}

// Input layout: 2 bytes little-endian payload length, the payload, then the
// bulk (whatever remains). A short input is all payload.
inline rpc::Request SplitRequest(const uint8_t* data, size_t size, uint16_t service) {
  rpc::Request req;
  req.service = service;
  req.peer = "fuzz:0";
  if (size < 2) {
    req.payload.assign(reinterpret_cast<const char*>(data), size);
    return req;
  }
  size_t len = std::min<size_t>(data[0] | (size_t{data[1]} << 8), size - 2);
  req.payload.assign(reinterpret_cast<const char*>(data + 2), len);
  req.bulk.assign(data + 2 + len, data + size);
  return req;
}

}  // namespace sfs::fuzz
