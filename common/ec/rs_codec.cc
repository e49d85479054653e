// Reed–Solomon through ISA-L. The decode path follows ISA-L's own recipe
// (examples/ec/ec_simple_example.c): take K surviving rows of the generator,
// invert that K x K matrix, and multiply each wanted chunk's generator row by
// the inverse; the result is one more "encode" of the K sources.
#include "common/ec/rs_codec.h"

#include <isa-l/erasure_code.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <string>

namespace sfs::ec {
namespace {

constexpr size_t kMaxCachedPatterns = 1024;

// Every span has length `len`; `what` names the argument for the message.
template <typename Span>
Status CheckLengths(std::span<const Span> spans, size_t len, const char* what) {
  for (size_t i = 0; i < spans.size(); ++i) {
    if (spans[i].size() != len) {
      return Status::Errno(EINVAL, std::string(what) + " chunk " + std::to_string(i) + " is " +
                                       std::to_string(spans[i].size()) + " bytes, expected " +
                                       std::to_string(len));
    }
    if (spans[i].data() == nullptr && len > 0) {
      return Status::Errno(EINVAL, std::string(what) + " chunk " + std::to_string(i) + " is null");
    }
  }
  return Status::Ok();
}

Status CheckLen(size_t len) {
  if (len > static_cast<size_t>(INT_MAX)) {
    return Status::Errno(EINVAL, "chunk length " + std::to_string(len) + " exceeds 2^31-1");
  }
  return Status::Ok();
}

}  // namespace

struct RsCodec::Tables {
  int sources = 0;                // == k
  int outputs = 0;                // rows of the decode matrix
  std::vector<uint8_t> gftbls;    // 32 * sources * outputs
};

RsCodec::RsCodec(int k, int m) : k_(k), m_(m), matrix_((k + m) * k), enc_tables_(32 * k * m) {
  gf_gen_cauchy1_matrix(matrix_.data(), k + m, k);
  ec_init_tables(k, m, &matrix_[k * k], enc_tables_.data());
}

Result<std::unique_ptr<RsCodec>> RsCodec::Create(int k, int m) {
  if (k < 1 || m < 1 || k + m > kMaxChunks) {
    return Status::Errno(EINVAL, "erasure code " + std::to_string(k) + "+" + std::to_string(m) +
                                     ": need K >= 1, M >= 1, K+M <= " + std::to_string(kMaxChunks));
  }
  return std::unique_ptr<RsCodec>(new RsCodec(k, m));
}

Status RsCodec::Encode(std::span<const std::span<const uint8_t>> data,
                       std::span<const std::span<uint8_t>> parity) const {
  if (data.size() != static_cast<size_t>(k_) || parity.size() != static_cast<size_t>(m_)) {
    return Status::Errno(EINVAL, "encode: got " + std::to_string(data.size()) + " data and " +
                                     std::to_string(parity.size()) + " parity chunks for " +
                                     std::to_string(k_) + "+" + std::to_string(m_));
  }
  size_t len = data[0].size();
  SFS_RETURN_IF_ERROR(CheckLen(len));
  SFS_RETURN_IF_ERROR(CheckLengths(data, len, "data"));
  SFS_RETURN_IF_ERROR(CheckLengths(parity, len, "parity"));
  if (len == 0) return Status::Ok();
  unsigned char* src[kMaxChunks];
  unsigned char* dst[kMaxChunks];
  // ISA-L's signature is not const-correct; it only reads the sources.
  for (int i = 0; i < k_; ++i) src[i] = const_cast<unsigned char*>(data[i].data());
  for (int i = 0; i < m_; ++i) dst[i] = parity[i].data();
  ec_encode_data(static_cast<int>(len), k_, m_, const_cast<unsigned char*>(enc_tables_.data()),
                 src, dst);
  return Status::Ok();
}

Status RsCodec::Reconstruct(std::span<const std::span<uint8_t>> chunks,
                            std::span<const int> erased) const {
  const int n = k_ + m_;
  if (chunks.size() != static_cast<size_t>(n)) {
    return Status::Errno(EINVAL, "reconstruct: got " + std::to_string(chunks.size()) +
                                     " chunks for " + std::to_string(k_) + "+" +
                                     std::to_string(m_));
  }
  uint32_t outputs = 0;
  for (int e : erased) {
    if (e < 0 || e >= n) {
      return Status::Errno(EINVAL, "reconstruct: erased index " + std::to_string(e) +
                                       " outside 0.." + std::to_string(n - 1));
    }
    if (outputs & (1u << e)) {
      return Status::Errno(EINVAL, "reconstruct: erased index " + std::to_string(e) + " twice");
    }
    outputs |= 1u << e;
  }
  // Sources: the first K present chunks, data first (cheapest decode rows).
  uint32_t sources = 0;
  int present = 0;
  size_t len = SIZE_MAX;
  for (int i = 0; i < n; ++i) {
    if ((outputs & (1u << i)) || chunks[i].data() == nullptr) continue;
    ++present;
    if (len == SIZE_MAX) len = chunks[i].size();
    if (chunks[i].size() != len) {
      return Status::Errno(EINVAL, "reconstruct: chunk " + std::to_string(i) + " is " +
                                       std::to_string(chunks[i].size()) + " bytes, expected " +
                                       std::to_string(len));
    }
    if (std::popcount(sources) < k_) sources |= 1u << i;
  }
  if (present < k_) {
    return Status::Errno(EIO, "reconstruct: only " + std::to_string(present) + " of " +
                                  std::to_string(n) + " chunks survive, " + std::to_string(k_) +
                                  " needed (" + std::to_string(k_) + "+" + std::to_string(m_) +
                                  " tolerates " + std::to_string(m_) + " losses)");
  }
  for (int e : erased) {
    if (chunks[e].size() != len || (len > 0 && chunks[e].data() == nullptr)) {
      return Status::Errno(EINVAL, "reconstruct: output chunk " + std::to_string(e) + " is " +
                                       std::to_string(chunks[e].size()) + " bytes, expected " +
                                       std::to_string(len));
    }
  }
  SFS_RETURN_IF_ERROR(CheckLen(len));
  if (outputs == 0 || len == 0) return Status::Ok();
  std::shared_ptr<const Tables> t = DecodeTables(sources, outputs);
  if (!t) return Status::Errno(EIO, "reconstruct: singular decode matrix");  // cannot happen (Cauchy)
  unsigned char* src[kMaxChunks];
  unsigned char* dst[kMaxChunks];
  int s = 0, d = 0;
  for (int i = 0; i < n; ++i) {
    if (sources & (1u << i)) src[s++] = chunks[i].data();
    if (outputs & (1u << i)) dst[d++] = chunks[i].data();
  }
  ec_encode_data(static_cast<int>(len), k_, t->outputs,
                 const_cast<unsigned char*>(t->gftbls.data()), src, dst);
  return Status::Ok();
}

std::shared_ptr<const RsCodec::Tables> RsCodec::DecodeTables(uint32_t sources,
                                                             uint32_t outputs) const {
  uint64_t key = (static_cast<uint64_t>(sources) << 32) | outputs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  std::shared_ptr<const Tables> t = BuildDecodeTables(sources, outputs);
  if (!t) return t;
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= kMaxCachedPatterns) cache_.clear();
  cache_.emplace(key, t);
  return t;
}

std::shared_ptr<const RsCodec::Tables> RsCodec::BuildDecodeTables(uint32_t sources,
                                                                  uint32_t outputs) const {
  const int k = k_;
  // B = the generator rows of the sources; inv = B^-1 maps sources to data.
  std::vector<uint8_t> b(k * k), inv(k * k);
  int r = 0;
  for (int i = 0; i < k_ + m_; ++i) {
    if (!(sources & (1u << i))) continue;
    std::copy_n(&matrix_[i * k], k, &b[r * k]);
    ++r;
  }
  if (gf_invert_matrix(b.data(), inv.data(), k) != 0) return nullptr;
  auto t = std::make_shared<Tables>();
  t->sources = k;
  t->outputs = std::popcount(outputs);
  std::vector<uint8_t> rows(t->outputs * k);
  int o = 0;
  for (int e = 0; e < k_ + m_; ++e) {
    if (!(outputs & (1u << e))) continue;
    // Row e of the generator times inv (for a data chunk, row e of inv itself).
    for (int j = 0; j < k; ++j) {
      uint8_t acc = 0;
      for (int l = 0; l < k; ++l) acc ^= gf_mul(matrix_[e * k + l], inv[l * k + j]);
      rows[o * k + j] = acc;
    }
    ++o;
  }
  t->gftbls.resize(32 * k * t->outputs);
  ec_init_tables(k, t->outputs, rows.data(), t->gftbls.data());
  return t;
}

Status RsCodec::UpdateParity(int index, std::span<const uint8_t> old_data,
                             std::span<const uint8_t> new_data,
                             std::span<const std::span<uint8_t>> parity) const {
  if (index < 0 || index >= k_) {
    return Status::Errno(EINVAL, "update parity: data index " + std::to_string(index) +
                                     " outside 0.." + std::to_string(k_ - 1));
  }
  if (parity.size() != static_cast<size_t>(m_)) {
    return Status::Errno(EINVAL, "update parity: got " + std::to_string(parity.size()) +
                                     " parity chunks, expected " + std::to_string(m_));
  }
  size_t len = new_data.size();
  SFS_RETURN_IF_ERROR(CheckLen(len));
  std::span<const uint8_t> both[] = {old_data, new_data};
  SFS_RETURN_IF_ERROR(CheckLengths<std::span<const uint8_t>>(both, len, "data"));
  SFS_RETURN_IF_ERROR(CheckLengths(parity, len, "parity"));
  if (len == 0) return Status::Ok();
  unsigned char* dst[kMaxChunks];
  for (int i = 0; i < m_; ++i) dst[i] = parity[i].data();
  // XOR-accumulating multiply-add: applying old then new adds A*(old ^ new).
  auto* tbl = const_cast<unsigned char*>(enc_tables_.data());
  ec_encode_data_update(static_cast<int>(len), k_, m_, index, tbl,
                        const_cast<unsigned char*>(old_data.data()), dst);
  ec_encode_data_update(static_cast<int>(len), k_, m_, index, tbl,
                        const_cast<unsigned char*>(new_data.data()), dst);
  return Status::Ok();
}

size_t RsCodec::CachedPatterns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

}  // namespace sfs::ec
