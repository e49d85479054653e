// The exposition format, byte for byte where it matters, and the histogram's
// buckets.
#include "common/metrics/metrics.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace sfs::metrics {
namespace {

TEST(MetricsTest, CounterFamilyRendersHelpTypeAndOneLinePerSeries) {
  Registry r;
  Family<Counter>& f = r.AddCounter("sfs_test_requests_total", "Requests.", {"op", "errno"});
  f.With({"read", "OK"}).Inc(3);
  f.With({"write", "ENOSPC"}).Inc();
  EXPECT_EQ(r.Render(),
            "# HELP sfs_test_requests_total Requests.\n"
            "# TYPE sfs_test_requests_total counter\n"
            "sfs_test_requests_total{op=\"read\",errno=\"OK\"} 3\n"
            "sfs_test_requests_total{op=\"write\",errno=\"ENOSPC\"} 1\n");
}

TEST(MetricsTest, WithReturnsTheSameSeriesForTheSameLabels) {
  Registry r;
  Family<Counter>& f = r.AddCounter("c_total", "c", {"op"});
  Counter& a = f.With({"x"});
  f.With({"x"}).Inc(2);
  EXPECT_EQ(&a, &f.With({"x"}));
  EXPECT_EQ(a.Value(), 2u);
}

TEST(MetricsTest, GaugeWithoutLabelsHasNoBraces) {
  Registry r;
  r.AddGauge("sfs_test_open_files", "Open files.").With({}).Set(-4);
  EXPECT_EQ(r.Render(),
            "# HELP sfs_test_open_files Open files.\n"
            "# TYPE sfs_test_open_files gauge\n"
            "sfs_test_open_files -4\n");
}

TEST(MetricsTest, LabelValuesAndHelpAreEscaped) {
  Registry r;
  r.AddCounter("e_total", "a \\ b\nc", {"job"}).With({"q\"x\\y\nz"}).Inc();
  EXPECT_EQ(r.Render(),
            "# HELP e_total a \\\\ b\\nc\n"
            "# TYPE e_total counter\n"
            "e_total{job=\"q\\\"x\\\\y\\nz\"} 1\n");
}

TEST(MetricsTest, HistogramBucketsAreCumulativeAndEndWithInf) {
  Registry r;
  Histogram& h = r.AddHistogram("lat_seconds", "Latency.", {"op"}).With({"read"});
  h.ObserveNanos(5'000);           // <= 10 us
  h.ObserveNanos(10'000);          // <= 10 us (bounds are inclusive)
  h.ObserveNanos(30'000);          // <= 50 us
  h.ObserveNanos(20'000'000'000);  // over 10 s: +Inf only
  std::string out = r.Render();
  EXPECT_NE(out.find("# TYPE lat_seconds histogram\n"), std::string::npos);
  EXPECT_NE(out.find("lat_seconds_bucket{op=\"read\",le=\"1e-05\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("lat_seconds_bucket{op=\"read\",le=\"2.5e-05\"} 2\n"), std::string::npos);
  EXPECT_NE(out.find("lat_seconds_bucket{op=\"read\",le=\"5e-05\"} 3\n"), std::string::npos);
  EXPECT_NE(out.find("lat_seconds_bucket{op=\"read\",le=\"10\"} 3\n"), std::string::npos);
  EXPECT_NE(out.find("lat_seconds_bucket{op=\"read\",le=\"+Inf\"} 4\n"), std::string::npos);
  EXPECT_NE(out.find("lat_seconds_sum{op=\"read\"} 20.000045\n"), std::string::npos) << out;
  EXPECT_NE(out.find("lat_seconds_count{op=\"read\"} 4\n"), std::string::npos);
}

TEST(MetricsTest, HistogramSnapshotCountsEveryObservationOfManyThreads) {
  Histogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, t] {
      for (int i = 0; i < 10000; ++i) h.ObserveNanos(static_cast<uint64_t>(t) * 1'000'000);
    });
  }
  for (auto& t : threads) t.join();
  Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.count, 40000u);
  EXPECT_EQ(s.sum_ns, 10000ull * (0 + 1 + 2 + 3) * 1000000ull);
  EXPECT_EQ(s.buckets[0], 10000u);  // the zeros
}

TEST(MetricsTest, CollectorsRenderInRegistrationOrder) {
  Registry r;
  r.AddGauge("a_g", "a").With({}).Set(1);
  r.AddCollector([](Writer& w) {
    w.Family("b_bytes", "b", "gauge");
    w.Sample("b_bytes", {{"ost", "3"}}, 2.5);
  });
  EXPECT_EQ(r.Render(),
            "# HELP a_g a\n# TYPE a_g gauge\na_g 1\n"
            "# HELP b_bytes b\n# TYPE b_bytes gauge\nb_bytes{ost=\"3\"} 2.5\n");
}

TEST(MetricsTest, ErrnoLabelNamesTheErrno) {
  EXPECT_EQ(ErrnoLabel(ENOENT), "ENOENT");
  EXPECT_EQ(ErrnoLabel(0), "OK");
}

}  // namespace
}  // namespace sfs::metrics
