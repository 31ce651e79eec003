// RULE: threads that map the same variable tofrom at once share one device copy: the copy back of one thread never loses another's update, and a new mapping starts from the last copy back
// EXPECT: counter=20000
#include <stdio.h>

int main(void) {
  int counter = 0;
#pragma omp parallel for num_threads(4)
  for (int i = 0; i < 20000; i++) {
#pragma omp target map(tofrom: counter)
    {
#pragma omp atomic update
      counter += 1;
    }
  }
  printf("counter=%d\n", counter);
  return counter != 20000;
}
