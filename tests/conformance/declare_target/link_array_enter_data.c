// RULE: a declare target link array mapped with target enter data is used by a later kernel without a map and copied back by exit data
// EXPECT: big[0]=1 big[999]=1000
#include <stdio.h>

int big[1000];
#pragma omp declare target link(big)

#pragma omp declare target
void bump(void) {
  for (int i = 0; i < 1000; i++) big[i] += 1;
}
#pragma omp end declare target

int main(void) {
  for (int i = 0; i < 1000; i++) big[i] = i;
#pragma omp target enter data map(to: big)
#pragma omp target
  bump();
#pragma omp target exit data map(from: big)
  printf("big[0]=%d big[999]=%d\n", big[0], big[999]);
  for (int i = 0; i < 1000; i++) if (big[i] != i + 1) return 1;
  return 0;
}
