// JobStats: per-job counts, the bound on jobs and the fold into "other".
#include "common/metrics/job_stats.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace sfs::metrics {
namespace {

std::string Render(const JobStats& j) {
  Writer w;
  j.Render(w);
  return w.Take();
}

TEST(JobStatsTest, CountsOpsAndBytesPerJob) {
  JobStats j("sfs_t_job");
  j.Add("jobA", 0, 4096);
  j.Add("jobA", 100, 0);
  j.Add("jobB", 7, 0);
  j.Add("", 5, 5);  // no job: not counted
  std::string out = Render(j);
  EXPECT_NE(out.find("sfs_t_job_ops_total{job=\"jobA\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("sfs_t_job_write_bytes_total{job=\"jobA\"} 4096\n"), std::string::npos);
  EXPECT_NE(out.find("sfs_t_job_read_bytes_total{job=\"jobA\"} 100\n"), std::string::npos);
  EXPECT_NE(out.find("sfs_t_job_read_bytes_total{job=\"jobB\"} 7\n"), std::string::npos);
  EXPECT_EQ(out.find("other"), std::string::npos);
  EXPECT_EQ(j.tracked(), 2u);
}

TEST(JobStatsTest, MoreJobsThanTheBoundFoldTheLeastRecentIntoOther) {
  JobStats j("t", 3);
  for (const char* job : {"j0", "j1", "j2"}) j.Add(job, 10, 0);
  j.Add("j3", 1, 0);  // evicts one of j0..j2 (all used in the same ms: any)
  EXPECT_EQ(j.tracked(), 3u);
  std::string out = Render(j);
  EXPECT_NE(out.find("t_read_bytes_total{job=\"j3\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_read_bytes_total{job=\"other\"} 10\n"), std::string::npos) << out;
  EXPECT_NE(out.find("t_ops_total{job=\"other\"} 1\n"), std::string::npos) << out;
  // Totals over all job series are what was added.
  uint64_t total = 0;
  size_t pos = 0;
  while ((pos = out.find("t_read_bytes_total{", pos)) != std::string::npos) {
    pos = out.find("} ", pos) + 2;
    total += std::stoull(out.substr(pos));
  }
  EXPECT_EQ(total, 31u);
}

TEST(JobStatsTest, LongJobIdsAreCut) {
  JobStats j("t");
  j.Add(std::string(500, 'x'), 1, 0);
  EXPECT_NE(Render(j).find("{job=\"" + std::string(JobStats::kMaxJobIdBytes, 'x') + "\"}"),
            std::string::npos);
}

TEST(JobStatsTest, ManyThreadsAndJobsOverTheBoundLoseNothing) {
  JobStats j("t", 8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&j, t] {
      for (int i = 0; i < 20000; ++i) j.Add("job" + std::to_string((i + t) % 20), 1, 2);
    });
  }
  for (auto& t : threads) t.join();
  std::string out = Render(j);
  uint64_t ops = 0, wb = 0;
  for (auto [name, sum] :
       {std::pair{"t_ops_total{", &ops}, std::pair{"t_write_bytes_total{", &wb}}) {
    size_t pos = 0;
    while ((pos = out.find(name, pos)) != std::string::npos) {
      pos = out.find("} ", pos) + 2;
      *sum += std::stoull(out.substr(pos));
    }
  }
  EXPECT_EQ(ops, 80000u);
  EXPECT_EQ(wb, 160000u);
  EXPECT_LE(j.tracked(), 8u);
}

}  // namespace
}  // namespace sfs::metrics
