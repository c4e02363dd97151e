#pragma once
// Measurements over MPI ranks (OpenMPI): `mpirun -np N kiln tune ...` starts N copies;
// rank 0 searches and sends candidates to ranks 1..N-1, each of which measures them
// in a forked worker with a timeout (measure_isolated) and sends the result back.
// With one rank, rank 0 measures in a local pool.
#include <memory>
#include <string>

#include "tuner/measure.h"

namespace kiln::tuner {

// Whether this process was started by mpirun (OMPI_COMM_WORLD_SIZE or PMIX_RANK set).
bool launched_by_mpirun();

class MpiSession {
 public:
  MpiSession();  // MPI_Init
  ~MpiSession();  // MPI_Finalize (after stopping the workers when rank 0)
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ranks > 0: serve measurement requests until rank 0 says stop.
  void serve(const MeasureOptions& opt);
  // Rank 0: the measurer spreading candidates over ranks 1..N-1.
  std::unique_ptr<Measurer> measurer(const MeasureOptions& opt);
  // Rank 0: tells every worker to stop (also done by the destructor).
  void stop_workers();

 private:
  int rank_ = 0, size_ = 1;
  bool stopped_ = false;
};

// The measurer of a command that takes -j and runs under mpirun: with mpirun, starts
// `session`; rank 0 gets the MPI measurer, the other ranks serve measurements until rank 0
// stops them and then get null (the command returns). Without mpirun, a local pool of
// `jobs` workers.
std::unique_ptr<Measurer> command_measurer(const MeasureOptions& opt, int jobs, std::unique_ptr<MpiSession>& session);

}  // namespace kiln::tuner
