// RULE: threads that map the same large arrays tofrom at once (128 KiB inside one 2 MiB block, 3 MiB across blocks: copies long enough to be made outside the mapping table's lock) share one device copy: every kernel finds it filled, and no copy back loses another thread's update
// EXPECT: small=2000 large=100 unfilled=0 intact=1
#include <stdio.h>
#include <stdlib.h>

#define SMALL (32 * 1024)  // ints: 128 KiB
#define LARGE (768 * 1024) // ints: 3 MiB
#define FILLED 12345

int main(void) {
  // Inside one 2 MiB block, so that it is a mapping of one shard of the table.
  int *small = aligned_alloc(1 << 21, SMALL * sizeof(int));
  int *large = malloc(LARGE * sizeof(int));
  if (!small || !large) return 2;
  for (int i = 0; i < SMALL; i++) small[i] = FILLED;
  for (int i = 0; i < LARGE; i++) large[i] = FILLED;
  small[0] = small[1] = large[0] = large[1] = 0;
#pragma omp parallel for num_threads(4) schedule(dynamic)
  for (int i = 0; i < 2000; i++) {
    // [0]: updates; [1]: kernels that found the far end of the device copy not yet filled.
#pragma omp target map(tofrom: small[0:SMALL])
    {
#pragma omp atomic update
      small[0] += 1;
      if (small[SMALL - 1] != FILLED) {
#pragma omp atomic update
        small[1] += 1;
      }
    }
    if (i % 20 == 0) {
#pragma omp target map(tofrom: large[0:LARGE])
      {
#pragma omp atomic update
        large[0] += 1;
        if (large[LARGE - 1] != FILLED || large[LARGE / 2] != FILLED) {
#pragma omp atomic update
          large[1] += 1;
        }
      }
    }
  }
  int intact = 1;
  for (int i = 2; i < SMALL; i++) intact &= small[i] == FILLED;
  for (int i = 2; i < LARGE; i++) intact &= large[i] == FILLED;
  printf("small=%d large=%d unfilled=%d intact=%d\n", small[0], large[0], small[1] + large[1],
         intact);
  return !(small[0] == 2000 && large[0] == 100 && small[1] + large[1] == 0 && intact);
}
