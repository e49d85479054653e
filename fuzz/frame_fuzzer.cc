// libFuzzer target: the frame codec (net::DecodeHeader, net::DecodeFrame).
// A frame that decodes must re-encode to the very same bytes.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "common/net/frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sfs::net;
  if (size >= kHeaderSize) (void)DecodeHeader(data);
  sfs::Result<Frame> f = DecodeFrame({data, size});
  if (!f.ok()) return 0;
  std::span<const uint8_t> payload(reinterpret_cast<const uint8_t*>(f->payload.data()),
                                   f->payload.size());
  std::vector<uint8_t> again = EncodeFrame(f->header, payload, f->bulk);
  if (again.size() != size || !std::equal(again.begin(), again.end(), data)) std::abort();
  return 0;
}
