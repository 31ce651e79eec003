// What the first round of mappings costs beyond later ones: rounds of `target enter data` of
// N small arrays then `target exit data` of them, in one process, each phase timed. The first
// enter grows the runtime's tables and takes fresh pages for them and for the device copies;
// later rounds reuse that memory, so the difference is the first-time cost that the suite's
// `mappings` phases include. Not part of the suite; see BENCHMARKS.md.
//
//   clang-19 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -I bench/programs \
//       bench/diagnostics/first_rounds.c -o /tmp/first_rounds
//   LD_LIBRARY_PATH=dist/lib /tmp/first_rounds 10000 3            # ours
//   LD_LIBRARY_PATH=/usr/lib/llvm-19/lib /tmp/first_rounds 10000 3 # LLVM 19's
#include "mapped_arrays.h"

#define LEN 16

int main(int argc, char **argv) {
  long n = arg_or(argc, argv, 1, 10000);
  long rounds = arg_or(argc, argv, 2, 3);
  int **arrays = new_arrays(n, LEN);
  load_image();
  for (long r = 0; r < rounds; r++) {
    double t0 = now_ns();
    enter_arrays(arrays, n, LEN);
    double t1 = now_ns();
    exit_arrays(arrays, n, LEN);
    double t2 = now_ns();
    printf("round %ld: enter %.0f ns, exit %.0f ns per operation\n", r, (t1 - t0) / n,
           (t2 - t1) / n);
  }
  for (long i = 0; i < n; i++)
    free(arrays[i]);
  free(arrays);
  return 0;
}
