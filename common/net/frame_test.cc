// The frame codec accepts good frames and rejects every corrupted, truncated
// and oversized frame in a generated set.
#include "common/net/frame.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "common/crc32c.h"

namespace sfs::net {
namespace {

std::vector<uint8_t> SampleFrame(std::mt19937_64& rng) {
  std::vector<uint8_t> payload(rng() % 200), bulk(rng() % 3000);
  for (auto& b : payload) b = rng();
  for (auto& b : bulk) b = rng();
  FrameHeader h;
  h.kind = (rng() & 1) ? FrameKind::kRequest : FrameKind::kResponse;
  h.service = 1 + rng() % 2;
  h.request_id = rng();
  return EncodeFrame(h, payload, bulk);
}

TEST(FrameTest, RoundTripsGoodFrames) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100; ++i) {
    auto bytes = SampleFrame(rng);
    auto f = DecodeFrame(bytes);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(kHeaderSize + f->payload.size() + f->bulk.size(), bytes.size());
  }
}

// A receiver folds each read's bytes into the crc as they arrive
// (tcp_channel.cc); however the body is cut, the crc is the body's.
TEST(FrameTest, ABodyCrcFoldedInPiecesVerifiesAndAnyOtherDoesNot) {
  std::mt19937_64 rng(3);
  std::vector<uint8_t> payload(77), bulk(5000);
  for (auto& b : payload) b = rng();
  for (auto& b : bulk) b = rng();
  FrameHeader h;
  h.payload_len = payload.size();
  h.bulk_len = bulk.size();
  h.body_crc = BodyCrc(payload, bulk);
  std::vector<uint8_t> body(payload);
  body.insert(body.end(), bulk.begin(), bulk.end());
  for (int round = 0; round < 20; ++round) {
    uint32_t crc = 0;
    for (size_t at = 0; at < body.size();) {
      size_t n = std::min<size_t>(body.size() - at, 1 + rng() % 1500);
      crc = crc32c::Extend(crc, body.data() + at, n);
      at += n;
    }
    EXPECT_TRUE(VerifyBodyCrc(h, payload.size(), bulk.size(), crc).ok());
    EXPECT_EQ(VerifyBodyCrc(h, payload.size(), bulk.size(), crc ^ 1).code(), EBADMSG);
  }
  EXPECT_EQ(VerifyBodyCrc(h, payload.size(), bulk.size() - 1, h.body_crc).code(), EBADMSG);
}

TEST(FrameTest, RejectsEverySingleByteCorruption) {
  std::mt19937_64 rng(2);
  for (int i = 0; i < 30; ++i) {
    auto bytes = SampleFrame(rng);
    for (size_t pos = 0; pos < bytes.size(); ++pos) {
      auto bad = bytes;
      bad[pos] ^= static_cast<uint8_t>(1 + rng() % 255);
      ASSERT_FALSE(DecodeFrame(bad).ok()) << "corruption at byte " << pos << " accepted";
    }
  }
}

TEST(FrameTest, RejectsEveryTruncationAndExtension) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 30; ++i) {
    auto bytes = SampleFrame(rng);
    for (size_t len = 0; len < bytes.size(); ++len) {
      ASSERT_FALSE(DecodeFrame(std::span(bytes.data(), len)).ok()) << "truncated to " << len;
    }
    bytes.push_back(0);
    ASSERT_FALSE(DecodeFrame(bytes).ok());
  }
}

TEST(FrameTest, RejectsOversizedLengthsWithEmsgsize) {
  for (uint32_t which = 0; which < 2; ++which) {
    FrameHeader h;
    h.payload_len = which == 0 ? kMaxPayload + 1 : 0;
    h.bulk_len = which == 1 ? kMaxBulk + 1 : 0;
    uint8_t buf[kHeaderSize];
    EncodeHeader(h, buf);
    auto r = DecodeHeader(buf);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), EMSGSIZE);
  }
}

TEST(FrameTest, RejectsRandomGarbageHeaders) {
  std::mt19937_64 rng(4);
  for (int i = 0; i < 10000; ++i) {
    uint8_t buf[kHeaderSize];
    for (auto& b : buf) b = rng();
    ASSERT_FALSE(DecodeHeader(buf).ok());
  }
}

}  // namespace
}  // namespace sfs::net
