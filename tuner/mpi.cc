#include "tuner/mpi.h"

#include <fmt/format.h>
#include <mpi.h>

#include <cstdlib>
#include <deque>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "support/json.h"

namespace kiln::tuner {

namespace {

constexpr int kRequest = 1, kReply = 2, kStop = 3;

void send_text(const std::string& s, int dest, int tag) {
  MPI_Send(s.data(), static_cast<int>(s.size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD);
}

std::string recv_text(int source, int tag, MPI_Status* st) {
  MPI_Status probe;
  MPI_Probe(source, tag, MPI_COMM_WORLD, &probe);
  int n = 0;
  MPI_Get_count(&probe, MPI_CHAR, &n);
  std::string s(static_cast<size_t>(n), '\0');
  MPI_Recv(s.data(), n, MPI_CHAR, probe.MPI_SOURCE, probe.MPI_TAG, MPI_COMM_WORLD, st);
  return s;
}

class MpiPool : public Measurer {
 public:
  explicit MpiPool(int size) : size_(size) {}
  int parallelism() const override { return size_ - 1; }
  std::string describe() const override { return fmt::format("MPI: {} measuring ranks", size_ - 1); }

  std::vector<MeasureResult> measure(const std::vector<MeasureInput>& inputs) override {
    std::vector<MeasureResult> results(inputs.size());
    std::deque<int> idle;
    for (int r = 1; r < size_; ++r) idle.push_back(r);
    std::vector<size_t> slot_of(static_cast<size_t>(size_), 0);
    size_t next = 0, pending = 0;
    while (next < inputs.size() || pending > 0) {
      while (next < inputs.size() && !idle.empty()) {
        int r = idle.front();
        idle.pop_front();
        const MeasureInput& in = inputs[next];
        nlohmann::json j = {{"template", in.template_name}, {"workload", in.workload.key()}, {"config", in.config}};
        send_text(j.dump(), r, kRequest);
        slot_of[static_cast<size_t>(r)] = next++;
        ++pending;
      }
      MPI_Status st;
      std::string text = recv_text(MPI_ANY_SOURCE, kReply, &st);
      const size_t slot = slot_of[static_cast<size_t>(st.MPI_SOURCE)];
      results[slot] = MeasureResult::from_json(text);
      finished(slot, results[slot]);
      idle.push_back(st.MPI_SOURCE);
      --pending;
    }
    return results;
  }

 private:
  int size_;
};

}  // namespace

bool launched_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK"); }

MpiSession::MpiSession() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiSession::~MpiSession() {
  if (rank_ == 0) stop_workers();
  MPI_Finalize();
}

void MpiSession::stop_workers() {
  if (rank_ != 0 || stopped_) return;
  stopped_ = true;
  for (int r = 1; r < size_; ++r) send_text("", r, kStop);
}

void MpiSession::serve(const MeasureOptions& opt) {
  for (;;) {
    MPI_Status st;
    std::string text = recv_text(0, MPI_ANY_TAG, &st);
    if (st.MPI_TAG == kStop) return;
    MeasureResult r;
    try {
      nlohmann::json j = nlohmann::json::parse(text);
      MeasureInput in{j.at("template").get<std::string>(), Workload::from_key(j.at("workload").get<std::string>()),
                      json_integer<int64_t>(j.at("config"), "config")};
      r = measure_isolated(in, opt);
    } catch (const std::exception& e) {
      r.error = std::string("error: ") + e.what();
    }
    send_text(r.to_json(), 0, kReply);
  }
}

std::unique_ptr<Measurer> MpiSession::measurer(const MeasureOptions& opt) {
  if (size_ <= 1) return std::make_unique<LocalPool>(1, opt);
  return std::make_unique<MpiPool>(size_);
}

std::unique_ptr<Measurer> command_measurer(const MeasureOptions& opt, int jobs, std::unique_ptr<MpiSession>& session) {
  if (!launched_by_mpirun()) return std::make_unique<LocalPool>(jobs, opt);
  session = std::make_unique<MpiSession>();
  if (session->rank() == 0) return session->measurer(opt);
  session->serve(opt);
  return nullptr;
}

}  // namespace kiln::tuner
