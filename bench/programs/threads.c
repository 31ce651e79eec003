// Host threads launching target regions that map their own data, at once: aggregate
// throughput with 1 and with 2 threads on one device, and with 2 threads on two devices.
#include "common.h"
#include <pthread.h>

static long per_thread;

static void *work(void *arg) {
  int device = (int)(long)arg;
  int data[8] = {0};
  for (long i = 0; i < per_thread; i++) {
#pragma omp target map(tofrom: data) device(device)
    data[i & 7]++;
  }
  long sum = 0;
  for (int j = 0; j < 8; j++) sum += data[j];
  return (void *)(sum == per_thread ? 0 : 1L);
}

// `threads` threads on device 0, or each on its own device (`separate`): the second shares
// nothing per device, which shows what the shared per-device state costs.
static double run(int threads, int separate) {
  pthread_t t[2];
  double t0 = now_ns();
  for (int i = 0; i < threads; i++)
    pthread_create(&t[i], 0, work, (void *)(long)(separate ? i : 0));
  long bad = 0;
  for (int i = 0; i < threads; i++) {
    void *r;
    pthread_join(t[i], &r);
    bad += (long)r;
  }
  double t1 = now_ns();
  if (bad) exit(1);
  return threads * per_thread / ((t1 - t0) / 1e9);
}

int main(int argc, char **argv) {
  per_thread = arg_or(argc, argv, 1, 50000);
  // Each phase lasts tens of milliseconds, and on a shared 2-vCPU machine a phase can lose a
  // core to a neighbour for part of that: the three phases are repeated in turn and each
  // keeps its best throughput, the runtime's own capability.
  long reps = arg_or(argc, argv, 2, 5);
  int x = 0;
#pragma omp target map(tofrom: x)
  x = 1;
  double one = 0, two = 0, apart = 0;
  for (long r = 0; r < reps; r++) {
    double o = run(1, 0), t = run(2, 0), a = run(2, 1);
    one = o > one ? o : one;
    two = t > two ? t : two;
    apart = a > apart ? a : apart;
  }
  result("threads_1", one, "ops/s");
  result("threads_2", two, "ops/s");
  result("threads_scaling", two / one, "x");
  result("threads_2_devices_scaling", apart / one, "x");
  return 0;
}
