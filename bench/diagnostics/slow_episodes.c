// When is this machine slow? Rounds of `target enter data` then `target exit data` of N small
// arrays, for about S seconds in one process, each round timed: a round slower than 1.35 × the
// fastest tenth is slow, and consecutive slow rounds are one episode. Prints the share of slow
// rounds, how much slower they are, and how long the episodes last, so that a runtime's
// short benchmark phases (ours: a few ms at 10 thousand mappings) can be told apart from the
// machine's own slow stretches. Not part of the suite; see BENCHMARKS.md.
//
//   clang-19 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -I bench/programs \
//       bench/diagnostics/slow_episodes.c -o /tmp/slow_episodes
//   LD_LIBRARY_PATH=dist/lib /tmp/slow_episodes 2000 3            # ours
//   LD_LIBRARY_PATH=/usr/lib/llvm-19/lib /tmp/slow_episodes 2000 3 # LLVM 19's
#include "mapped_arrays.h"

#define LEN 16
#define MAX_ROUNDS 200000

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  long n = arg_or(argc, argv, 1, 2000);
  double seconds = (double)arg_or(argc, argv, 2, 3);
  int **arrays = new_arrays(n, LEN);
  double *start = malloc(MAX_ROUNDS * sizeof *start);
  double *ns = malloc(MAX_ROUNDS * sizeof *ns);
  double *sorted = malloc(MAX_ROUNDS * sizeof *sorted);
  load_image();
  long rounds = 0;
  double t_begin = now_ns();
  while (rounds < MAX_ROUNDS && now_ns() - t_begin < seconds * 1e9) {
    double t0 = now_ns();
    enter_arrays(arrays, n, LEN);
    exit_arrays(arrays, n, LEN);
    start[rounds] = (t0 - t_begin) / 1e6;
    ns[rounds] = (now_ns() - t0) / (2.0 * n);
    rounds++;
  }
  if (rounds < 10)
    return 1;
  // The first round grows the table: left out.
  for (long r = 1; r < rounds; r++)
    sorted[r - 1] = ns[r];
  qsort(sorted, rounds - 1, sizeof *sorted, by_value);
  double fast = sorted[(rounds - 1) / 10], median = sorted[(rounds - 1) / 2];
  long slow = 0, episodes = 0;
  double slow_sum = 0, longest = 0, episode_start = -1;
  for (long r = 1; r < rounds; r++) {
    int is_slow = ns[r] > 1.35 * fast;
    if (is_slow) {
      slow++;
      slow_sum += ns[r];
      if (episode_start < 0)
        episode_start = start[r];
    }
    if ((!is_slow || r == rounds - 1) && episode_start >= 0) {
      double end = is_slow ? start[r] + ns[r] * 2.0 * n / 1e6 : start[r];
      if (end - episode_start > longest)
        longest = end - episode_start;
      episodes++;
      episode_start = -1;
    }
  }
  printf("%ld rounds of %.2f ms; ns per operation: fastest tenth %.0f, median %.0f\n",
         rounds - 1, (start[rounds - 1] - start[1]) / (rounds - 2), fast, median);
  printf("slow rounds: %.1f %% (%.2f x the fastest tenth), %ld episodes, the longest %.1f ms\n",
         100.0 * slow / (rounds - 1), slow ? slow_sum / slow / fast : 0.0, episodes, longest);
  return 0;
}
