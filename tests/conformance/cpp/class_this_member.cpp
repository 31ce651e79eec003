// RULE: a member function's target region that maps this[0:1] copies the whole object's scalar members in and back
// EXPECT: count=3 total=60
#include <cstdio>

struct Acc {
  int count = 0;
  long total = 0;
  void add(int v) {
#pragma omp target map(tofrom: this[0:1])
    {
      count += 1;
      total += v;
    }
  }
};

int main() {
  Acc acc;
  acc.add(10);
  acc.add(20);
  acc.add(30);
  std::printf("count=%d total=%ld\n", acc.count, acc.total);
  return !(acc.count == 3 && acc.total == 60);
}
