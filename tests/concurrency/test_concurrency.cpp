// Concurrency of the real operators through the C API (docs/reliability/concurrency.md), run in
// the release build and under ThreadSanitizer (the tsan preset, scripts/test.sh):
//   * every operator (MlaPrologV2 / V3, MlaPreprocess, FIA V4, IFA V4, PFA V3) called from 4
//     threads at once, each with its own executors and its own stream (or the null stream), and
//     from 4 threads sharing one stream; every result bitwise equal to a serial run, repeated
//     runs bitwise identical; every call runs on 2 library threads (the plans say so);
//   * on a shared stream, an operator's run-time error is returned by exactly one
//     aclrtSynchronizeStream call, whichever thread makes it first after the failed work ran;
//   * one executor misused from two threads at once: a plain executor succeeds exactly once (the
//     other call gets 161002 "not a live executor"); a repeatable one runs one call at a time
//     (an overlapping run or address rebinding gets 161002 and changes nothing), never a race.
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <map>
#include <thread>
#include <vector>

#include "concurrency/concurrency_jobs.h"
#include "mlaops/runtime.h"
#include "support/isa_list.h"

namespace mlaops::testing {
namespace {

constexpr int kCallers = 4;     // application threads
constexpr int kLibThreads = 2;  // the library's own threads per call

class Concurrency : public ::testing::Test {
 protected:
  // Memory and streams need a current device on the calling thread (ACL-06, as in CANN): the test's
  // thread here, every caller thread at its start.
  void SetUp() override {
    set_num_threads(kLibThreads);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  }
  void TearDown() override {
    set_num_threads(0);
    reset_isa();
  }
};

// The bytes a job of each kind writes, from one fresh job run alone on the calling thread.
std::map<JobKind, std::string> serial_results() {
  std::map<JobKind, std::string> m;
  for (JobKind k : all_job_kinds()) {
    auto j = make_job(k);
    EXPECT_EQ(j->call(nullptr), ACLNN_SUCCESS) << job_name(k) << ": " << aclGetRecentErrMsg();
    m[k] = j->result();
  }
  return m;
}

TEST_F(Concurrency, SerialRunsAreRepeatableAndUseLibraryThreads) {
  for (Isa isa : test_isas()) {
    ASSERT_TRUE(set_isa(isa));
    const auto first = serial_results();
    const auto second = serial_results();
    for (JobKind k : all_job_kinds()) {
      SCOPED_TRACE(std::string(job_name(k)) + " isa " + isa_name(isa));
      EXPECT_EQ(first.at(k), second.at(k));
      EXPECT_GT(first.at(k).size(), 0u);
      const std::string e = make_job(k)->explain();
      EXPECT_GE(explained_threads(e), kLibThreads) << e;
    }
  }
}

// Each caller thread runs every operator (its own jobs, executors and stream; even threads use
// the null stream), in an order rotated per thread, twice.
TEST_F(Concurrency, ThreadsWithTheirOwnStreamsMatchTheSerialRun) {
  for (Isa isa : test_isas()) {
    ASSERT_TRUE(set_isa(isa));
    SCOPED_TRACE(isa_name(isa));
    const auto expected = serial_results();
    const auto& kinds = all_job_kinds();
    std::vector<std::vector<std::pair<JobKind, std::string>>> got(kCallers);
    std::vector<std::vector<std::string>> errors(kCallers);
    std::latch start(kCallers);
    std::vector<std::thread> callers;
    for (int t = 0; t < kCallers; ++t)
      callers.emplace_back([&, t] {
        aclrtSetDevice(0);
        aclrtStream stream = nullptr;
        if (t % 2 == 1 && aclrtCreateStream(&stream) != ACL_SUCCESS) errors[t].push_back("aclrtCreateStream");
        start.arrive_and_wait();
        for (int round = 0; round < 2; ++round)
          for (size_t i = 0; i < kinds.size(); ++i) {
            const JobKind k = kinds[(i + static_cast<size_t>(t)) % kinds.size()];
            auto j = make_job(k);
            const aclnnStatus s = j->call(stream);
            if (s != ACLNN_SUCCESS) errors[t].push_back(std::string(job_name(k)) + ": " + aclGetRecentErrMsg());
            got[t].emplace_back(k, j->result());
          }
        if (stream != nullptr) aclrtDestroyStream(stream);
      });
    for (auto& c : callers) c.join();
    for (int t = 0; t < kCallers; ++t) {
      for (const std::string& e : errors[t]) ADD_FAILURE() << "thread " << t << ": " << e;
      ASSERT_EQ(got[t].size(), 2 * kinds.size());
      for (const auto& [k, bytes] : got[t]) EXPECT_TRUE(bytes == expected.at(k)) << "thread " << t << " " << job_name(k);
    }
  }
}

// The caller threads enqueue on one stream; each synchronizes it after its own call (which also
// waits for the other threads' work queued before).
TEST_F(Concurrency, ThreadsSharingOneStreamMatchTheSerialRun) {
  const auto expected = serial_results();
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  const auto& kinds = all_job_kinds();
  std::vector<std::vector<std::unique_ptr<Job>>> jobs(kCallers);
  std::vector<std::vector<aclnnStatus>> status(kCallers);
  std::latch start(kCallers);
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t)
    callers.emplace_back([&, t] {
      aclrtSetDevice(0);
      start.arrive_and_wait();
      for (size_t i = 0; i < kinds.size(); ++i) {
        jobs[t].push_back(make_job(kinds[(i + static_cast<size_t>(t)) % kinds.size()]));
        status[t].push_back(jobs[t].back()->call(stream));
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
  for (int t = 0; t < kCallers; ++t)
    for (size_t i = 0; i < jobs[t].size(); ++i) {
      EXPECT_EQ(status[t][i], ACLNN_SUCCESS) << "thread " << t << " " << job_name(jobs[t][i]->kind);
      EXPECT_TRUE(jobs[t][i]->result() == expected.at(jobs[t][i]->kind)) << "thread " << t << " "
                                                                          << job_name(jobs[t][i]->kind);
    }
}

// One thread's operator fails at run time (a cacheIndex slot past the cache, written after phase
// 1); the error goes to exactly one aclrtSynchronizeStream call, made by whichever thread
// synchronizes first after the failed work ran, and is then cleared.
TEST_F(Concurrency, SharedStreamErrorGoesToExactlyOneSynchronize) {
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  for (int iteration = 0; iteration < 3; ++iteration) {
    std::atomic<int> errors_seen{0};
    std::atomic<int> bad_codes{0};
    std::latch start(kCallers);
    std::vector<std::thread> callers;
    for (int t = 0; t < kCallers; ++t)
      callers.emplace_back([&, t] {
        aclrtSetDevice(0);
        const auto cp = mla_prolog_case(false);
        testdata::MlaPrologCase& c = *cp;
        MlaPrologCall call;
        uint64_t ws_size = 0;
        aclOpExecutor* ex = nullptr;
        start.arrive_and_wait();
        if (mla_prolog_phase1(c, call, &ws_size, &ex) != ACLNN_SUCCESS) {
          bad_codes.fetch_add(1);
          return;
        }
        if (t == 0) c.cache_index.set(0, 1e12);  // checked when the run starts: 161002, nothing written
        std::vector<char> ws(ws_size + 1);
        if (aclnnMlaPrologV2WeightNz(ws.data(), ws_size, ex, stream) != ACLNN_SUCCESS) bad_codes.fetch_add(1);
        const aclError e = aclrtSynchronizeStream(stream);
        if (e == ACLNN_ERR_PARAM_INVALID) errors_seen.fetch_add(1);
        else if (e != ACL_SUCCESS) bad_codes.fetch_add(1);
      });
    for (auto& c : callers) c.join();
    const aclError last = aclrtSynchronizeStream(stream);  // nothing left: every caller synchronized after its work
    EXPECT_EQ(last, ACL_SUCCESS);
    EXPECT_EQ(errors_seen.load(), 1);
    EXPECT_EQ(bad_codes.load(), 0);
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
}

// Two threads run the same plain executor at once: one succeeds, the other gets 161002.
TEST_F(Concurrency, PlainExecutorRunFromTwoThreadsSucceedsOnce) {
  const auto expected = serial_results();
  for (JobKind k : all_job_kinds()) {
    SCOPED_TRACE(job_name(k));
    for (int iteration = 0; iteration < 4; ++iteration) {
      auto j = make_job(k);
      uint64_t ws_size = 0;
      aclOpExecutor* ex = nullptr;
      ASSERT_EQ(j->phase1(&ws_size, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      aclnnStatus s[2] = {-1, -1};
      std::latch start(2);
      std::vector<std::thread> th;
      for (int t = 0; t < 2; ++t)
        th.emplace_back([&, t] {
          aclrtSetDevice(0);
          std::vector<char> ws(ws_size + 1);
          start.arrive_and_wait();
          s[t] = j->run(ws.data(), ws_size, ex, nullptr);
        });
      for (auto& x : th) x.join();
      EXPECT_EQ((s[0] == ACLNN_SUCCESS) + (s[1] == ACLNN_SUCCESS), 1) << s[0] << " " << s[1];
      EXPECT_TRUE(s[0] == ACLNN_ERR_PARAM_INVALID || s[1] == ACLNN_ERR_PARAM_INVALID);
      EXPECT_TRUE(j->result() == expected.at(k));
    }
  }
}

// Two threads run the same repeatable executor 6 times each (one synchronously, one on its own
// stream) while a third rebinds an output to the same address: every call succeeds or gets
// 161002 (busy) and the outputs stay the serial run's.
TEST_F(Concurrency, RepeatableExecutorRunsOneCallAtATime) {
  const auto expected = serial_results();
  for (JobKind k : all_job_kinds()) {
    SCOPED_TRACE(job_name(k));
    auto j = make_job(k);
    uint64_t ws_size = 0;
    aclOpExecutor* ex = nullptr;
    ASSERT_EQ(j->phase1(&ws_size, &ex), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(aclSetAclOpExecutorRepeatable(ex), ACLNN_SUCCESS);
    std::atomic<int> ok{0}, busy{0}, other{0};
    auto count = [&](int code) { (code == 0 ? ok : code == ACLNN_ERR_PARAM_INVALID ? busy : other).fetch_add(1); };
    std::latch start(3);
    std::vector<std::thread> th;
    for (int t = 0; t < 2; ++t)
      th.emplace_back([&, t] {
        aclrtSetDevice(0);
        aclrtStream stream = nullptr;
        if (t == 1) aclrtCreateStream(&stream);
        std::vector<char> ws(ws_size + 1);
        start.arrive_and_wait();
        for (int i = 0; i < 6; ++i) {
          const aclnnStatus s = j->run(ws.data(), ws_size, ex, stream);
          count(s != ACLNN_SUCCESS ? s : stream != nullptr ? aclrtSynchronizeStream(stream) : 0);
        }
        if (stream != nullptr) aclrtDestroyStream(stream);
      });
    std::atomic<int> rebind_other{0};
    th.emplace_back([&] {
      aclrtSetDevice(0);
      start.arrive_and_wait();
      for (int i = 0; i < 20; ++i) {
        const aclnnStatus s = aclSetOutputTensorAddr(ex, 0, nullptr, j->out0);  // the same address again
        if (s != ACLNN_SUCCESS && s != ACLNN_ERR_PARAM_INVALID) rebind_other.fetch_add(1);
      }
    });
    for (auto& x : th) x.join();
    EXPECT_EQ(ok.load() + busy.load(), 12);
    EXPECT_GE(ok.load(), 1);
    EXPECT_EQ(other.load(), 0);
    EXPECT_EQ(rebind_other.load(), 0);
    EXPECT_EQ(aclDestroyAclOpExecutor(ex), ACLNN_SUCCESS);
    EXPECT_TRUE(j->result() == expected.at(k));
  }
}

}  // namespace
}  // namespace mlaops::testing
