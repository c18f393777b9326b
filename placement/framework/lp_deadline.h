#pragma once
// Stops CLP at a wall-clock instant (the strategy's deadline). CLP's own limits
// (setMaximumSeconds, setMaximumWallSeconds) count from the start of each solve and are not
// checked while presolve runs, and CBC checks its limit only between nodes: on BERT-base over 16
// GPUs QuickP's root LP ran 60 s past a 3 s budget, and m-SCT's LP on GNMT (56k rows) took 82 s of
// a 30 s limit. CLP asks its event handler after every iteration and factorisation; returning 3
// stops it as stopped by the user (ClpSimplex::status() 5). Solvers copied from one that has it
// (CBC's) clone it.
#include <ClpEventHandler.hpp>
#include <chrono>

namespace placesim {

class StopClpAt : public ClpEventHandler {
 public:
  explicit StopClpAt(std::chrono::steady_clock::time_point deadline) : deadline_(deadline) {}
  int event(Event e) override {
    const bool checkpoint = e == endOfIteration || e == endOfFactorization;
    return checkpoint && std::chrono::steady_clock::now() > deadline_ ? 3 : -1;
  }
  ClpEventHandler* clone() const override { return new StopClpAt(*this); }

 private:
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace placesim
