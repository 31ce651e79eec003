// RULE: omp_target_memset fills device memory with a byte value and returns the pointer it was given
// EXPECT: ret=same bytes=0x5a5a5a5a,0x5a5a5a5a tail=7
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = 0;
  unsigned *d = (unsigned *)omp_target_alloc(8 * sizeof(unsigned), dev);
#pragma omp target is_device_ptr(d) device(dev)
  for (int i = 0; i < 8; i++) d[i] = 7;
  // fill only the first 6 elements
  void *r = omp_target_memset(d, 0x5a, 6 * sizeof(unsigned), dev);
  unsigned first = 0, sixth = 0, tail = 0;
#pragma omp target is_device_ptr(d) map(from: first, sixth, tail) device(dev)
  { first = d[0]; sixth = d[5]; tail = d[6] + d[7] - 7; }
  omp_target_free(d, dev);
  printf("ret=%s bytes=0x%x,0x%x tail=%u\n", r == d ? "same" : "other", first, sixth, tail);
  return !(r == d && first == 0x5a5a5a5au && sixth == 0x5a5a5a5au && tail == 7);
}
