// What this machine charges for the few things a construct's time is made of, so that two
// machines' benchmark ratios can be compared: a dependent add (the clock), an uncontended
// locked add and a mutex lock and unlock, a load that hits in a small buffer or misses in
// larger ones (random chase, 4 KiB pages, so the largest misses the TLB too), and a fresh
// page, populated with one call or touched. Each figure is the fastest of several tries:
// the machine's steady cost, not its slow stretches (see slow_episodes.c). No runtime is
// involved. Not part of the suite; scripts/gpu-run.sh runs it in its host_bench step.
//
//   cc -O2 -I bench/programs bench/diagnostics/machine_costs.c -o /tmp/machine_costs -lpthread
//   /tmp/machine_costs
#define _GNU_SOURCE
#include "common.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define TRIES 7
#define PAGE 4096

static double fastest(double *t, int n) {
  double m = t[0];
  for (int i = 1; i < n; i++)
    if (t[i] < m)
      m = t[i];
  return m;
}

// ns per add of a chain where each add needs the last one's result.
static double dependent_add(void) {
  const long n = 20000000;
  double t[TRIES];
  for (int k = 0; k < TRIES; k++) {
    uint64_t x = k;
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
      x += i;
      __asm__ volatile("" : "+r"(x)); // one add per step, kept in a register
    }
    t[k] = (now_ns() - t0) / n;
  }
  return fastest(t, TRIES);
}

static double locked_add(void) {
  const long n = 2000000;
  static uint64_t counter;
  double t[TRIES];
  for (int k = 0; k < TRIES; k++) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
      __atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
    t[k] = (now_ns() - t0) / n;
  }
  return fastest(t, TRIES);
}

static double mutex_pair(void) {
  const long n = 2000000;
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  double t[TRIES];
  for (int k = 0; k < TRIES; k++) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
      pthread_mutex_lock(&m);
      pthread_mutex_unlock(&m);
    }
    t[k] = (now_ns() - t0) / n;
  }
  return fastest(t, TRIES);
}

// ns per load of a random cyclic chase over `bytes`, one pointer per 64-byte line.
static double load_latency(size_t bytes) {
  size_t lines = bytes / 64, stride = 64 / sizeof(void *);
  void **buf = aligned_alloc(64, lines * 64);
  size_t *order = malloc(lines * sizeof *order);
  if (!buf || !order)
    return -1;
  for (size_t i = 0; i < lines; i++)
    order[i] = i;
  uint64_t seed = 88172645463325252ull;
  for (size_t i = lines - 1; i > 0; i--) { // Fisher-Yates, xorshift
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    size_t j = seed % (i + 1), s = order[i];
    order[i] = order[j], order[j] = s;
  }
  for (size_t i = 0; i < lines; i++)
    buf[order[i] * stride] = &buf[order[(i + 1) % lines] * stride];
  const long n = 500000;
  double t[TRIES];
  void **p = &buf[order[0] * stride];
  for (long i = 0; i < (long)lines; i++) // warm the caches and the TLB
    p = *p;
  for (int k = 0; k < TRIES; k++) {
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
      p = *p;
    t[k] = (now_ns() - t0) / n;
  }
  if (p == NULL)
    puts("");
  free(order);
  free(buf);
  return fastest(t, TRIES);
}

// µs per fresh 4 KiB page of an 8 MiB anonymous mapping, populated or touched.
static double fresh_page(int populate) {
  const size_t bytes = 8 << 20;
  double t[TRIES];
  for (int k = 0; k < TRIES; k++) {
    char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
      return -1;
    double t0 = now_ns();
    if (populate) {
      if (madvise(m, bytes, MADV_POPULATE_WRITE) != 0) {
        munmap(m, bytes);
        return -1; // before Linux 5.14
      }
    } else {
      for (size_t off = 0; off < bytes; off += PAGE)
        m[off] = 1;
    }
    t[k] = (now_ns() - t0) / 1e3 / (bytes / PAGE);
    munmap(m, bytes);
  }
  return fastest(t, TRIES);
}

int main(void) {
  double add = dependent_add();
  printf("machine costs (fastest of %d): dependent add %.3f ns (%.2f GHz if one cycle), "
         "locked add %.2f ns, mutex lock and unlock %.2f ns\n",
         TRIES, add, 1 / add, locked_add(), mutex_pair());
  printf("machine costs: load, random over 32 KiB %.2f ns, 1 MiB %.2f ns, 16 MiB %.1f ns, "
         "256 MiB %.1f ns\n",
         load_latency(32 << 10), load_latency(1 << 20), load_latency(16 << 20),
         load_latency(256 << 20));
  printf("machine costs: fresh 4 KiB page, populated %.2f us, touched %.2f us "
         "(-1: refused)\n",
         fresh_page(1), fresh_page(0));
  return 0;
}
