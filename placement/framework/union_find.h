#pragma once
// Union-find over 0..n-1 where the smaller index is always the root, so group representatives
// (and everything numbered from them) do not depend on the order of joins.
#include <algorithm>
#include <numeric>
#include <vector>

namespace placesim {

struct UnionFind {
  explicit UnionFind(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void join(int a, int b) {
    a = find(a);
    b = find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
  std::vector<int> parent;
};

}  // namespace placesim
