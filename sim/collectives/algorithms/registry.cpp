// The collective algorithm registry: one line per algorithm. A new algorithm is a file in this
// folder defining its CollectiveAlgorithmInfo, plus its line here (and its declaration).
#include <stdexcept>

#include "sim/collectives/algorithms.h"

namespace placesim {

CollectiveAlgorithmInfo ring_algorithm();
CollectiveAlgorithmInfo tree_algorithm();
CollectiveAlgorithmInfo halving_doubling_algorithm();
CollectiveAlgorithmInfo direct_algorithm();
CollectiveAlgorithmInfo hierarchical_algorithm();
CollectiveAlgorithmInfo multi_level_algorithm();
CollectiveAlgorithmInfo pairwise_algorithm();
CollectiveAlgorithmInfo nvls_algorithm();
CollectiveAlgorithmInfo nvls_tree_algorithm();

const Registry<CollectiveAlgorithmInfo>& collective_algorithm_registry() {
  static const Registry<CollectiveAlgorithmInfo> registry("collective algorithm", {
                                                                                     ring_algorithm(),
                                                                                     tree_algorithm(),
                                                                                     halving_doubling_algorithm(),
                                                                                     direct_algorithm(),
                                                                                     hierarchical_algorithm(),
                                                                                     multi_level_algorithm(),
                                                                                     pairwise_algorithm(),
                                                                                     nvls_algorithm(),
                                                                                     nvls_tree_algorithm(),
                                                                                 });
  return registry;
}

}  // namespace placesim
