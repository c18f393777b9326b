#pragma once
// Collectives step by step (fast enough for thousands of GPUs): the bulk-synchronous view.
//
// sim/collectives/collectives.h compiles a collective into every rank's messages, n^2 operators for a ring
// of n ranks (4.2M at 1,024 GPUs, 67M at 4,096). Here a collective is instead the list of its
// steps: the messages that run at the same time, and how many times the step repeats. Each
// distinct step is run once on an engine (a step equal to an earlier one reuses its time), as a small execution graph of its concurrent messages
// (one send and one receive step per GPU, a tensor per message), so the flow engine and SimGrid
// share the fabric's links among the step's flows max-min fair, and multi-NIC striping and
// per-destination allocations apply as for any transfer; the evaluator gives each message
// alpha + bytes / B alone, and the step no less than its busiest link's bytes over its bandwidth
// plus a message's latency (busiest_link_time), so that no engine runs faster than the links.
// The collective takes the sum over steps of repeats x step time.
//
// What this assumes: every rank starts a step when the whole previous step has ended (lockstep).
// Message by message, a rank goes on as soon as its own messages of the step have arrived. The
// two agree where every message of a step runs at one rate (the cross-checks in
// tests/test_collective_steps.cpp find the message-level times for every algorithm on a
// non-blocking switch, a 4:1 spine-leaf and NVLink servers, contiguous groups); where rates
// differ within a step (a ring over NVLink and NICs; halving-doubling over a permuted group on
// an oversubscribed fabric) ranks run ahead, and the lockstep time is an upper bound. A step's c
// chunks (CollectiveSpec::chunks) go one after another on each connection, as in the
// message-level model: the step repeats c times with 1/c of the bytes. Tree and chain algorithms
// pipeline chunks across steps, which lockstep cannot express: they have no step view
// (collective_steps_problem says so); run them message by message. The steps are the
// algorithm's phases (sim/collectives/shape.h): a ring phase is one step repeated, an exchange
// phase one step.
//
// The collective runs alone: nothing else shares the links (in a training iteration, use the
// message-level graph of sim/collectives/collectives.h).
#include <cstdint>
#include <string>
#include <vector>

#include "sim/collectives/collectives.h"
#include "sim/core/execution_graph.h"
#include "sim/engines/engine.h"

namespace placesim {

struct CollectiveMessage {
  DeviceId src = 0, dst = 0;
  double bytes = 0;         // on the wire (with NCCL costs, the protocol's bytes)
  double overhead_s = 0;    // NCCL's per-hop latency (Tensor::overhead_s)
  bool operator==(const CollectiveMessage&) const = default;
};

struct CollectiveStep {
  std::string what;                        // its phase's name: "ring", "hd.s2", "l1-ar", ...
  std::vector<CollectiveMessage> messages; // at the same time
  std::int64_t repeats = 1;                // back to back
};

// Tree and chain phases pipeline their chunks: their step view is the pipeline's, every edge of
// the trees (up and down) carrying one chunk at once, repeated hops + chunks - 1 times (the
// closed form's count): exact where every edge runs at one rate, an upper bound elsewhere.
// A collective's base latency (NCCL's, sim/collectives/nccl.h) is added once.
//
// Why the spec has no step view ("" when it has): collective_problem's reasons.
std::string collective_steps_problem(const CollectiveSpec& spec, const Cluster& cluster);

// The steps of the collective, in order. Throws std::invalid_argument with
// collective_steps_problem's reason.
std::vector<CollectiveStep> collective_steps(const CollectiveSpec& spec, const Cluster& cluster);

// One step as an execution graph: per GPU that sends a send step, per GPU that receives a
// receive step (communication steps, sim/core/graph.h), a tensor per message. Finalized.
// The least time the step's messages take on the links they share: the largest latency (with
// overhead) of its messages plus its busiest link's bytes over that link's bandwidth.
double busiest_link_time(const CollectiveStep& step, const Cluster& cluster);

ExecutionGraph step_graph(const CollectiveStep& step);

// The collective's time on each chosen engine: each step run once, times its repeats. The wall
// times are the engines' host time. Throws std::invalid_argument as collective_steps does.
EngineRuns run_collective_steps(const CollectiveSpec& spec, const Cluster& cluster, EngineSet which);

}  // namespace placesim
