// Helper for the kill -9 crash test (store_test.cc): appends records to the
// store in DIR from several threads until it is killed, and writes one line
// "<seq> <id>" to stdout for every append the store acknowledged. A line is
// written only after Append returned, so every printed record must survive.
//
// Usage: store_crash_child DIR RUN_ID THREADS
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"

namespace {

std::mutex out_mu;

void Ack(uint64_t seq, const std::string& id) {
  std::string line = std::to_string(seq) + " " + id + "\n";
  std::lock_guard<std::mutex> lock(out_mu);
  // One write(2) per line: a pipe write below PIPE_BUF is atomic, and no
  // stdio buffer can hold acknowledged lines when SIGKILL arrives.
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = write(STDOUT_FILENO, p, left);
    if (n <= 0) std::_Exit(3);
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s DIR RUN_ID THREADS\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  std::string run = argv[2];
  int threads = std::atoi(argv[3]);
  auto store = artel::store::Store::Open(dir);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  artel::store::Store* s = store->get();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([s, t, run] {
      for (int i = 0;; ++i) {
        // Thread 0 appends in batches of three; the others one at a time.
        int n = t == 0 ? 3 : 1;
        std::vector<artel::store::Record> batch;
        std::vector<std::string> ids;
        for (int k = 0; k < n; ++k) {
          std::string id =
              "r" + run + "-t" + std::to_string(t) + "-" + std::to_string(i) + "-" + std::to_string(k);
          artel::store::Record r;
          r.type = artel::store::RecordType::kWorkloadSubmitted;
          r.time_ms = i;
          r.key = "crash/" + id;
          r.payload = "{\"id\":\"" + id + "\"}";
          batch.push_back(std::move(r));
          ids.push_back(id);
        }
        auto seqs = s->AppendBatch(std::move(batch));
        if (!seqs.ok()) {
          std::fprintf(stderr, "append: %s\n", seqs.status().ToString().c_str());
          std::_Exit(1);
        }
        for (int k = 0; k < n; ++k) Ack((*seqs)[static_cast<size_t>(k)], ids[static_cast<size_t>(k)]);
      }
    });
  }
  for (auto& th : pool) th.join();
  return 0;
}
