// RULE: a declare target C++ global with a dynamic initializer is constructed on the device before the first kernel uses it
// EXPECT: device_a=7 device_b=49 host_a=7
#include <cstdio>

static int init_value() { return 7; }

struct Config {
  int a, b;
  Config() : a(init_value()), b(a * a) {}
};

#pragma omp declare target
Config cfg;
#pragma omp end declare target

int main() {
  int da = 0, db = 0;
#pragma omp target map(from: da, db)
  { da = cfg.a; db = cfg.b; }
  std::printf("device_a=%d device_b=%d host_a=%d\n", da, db, cfg.a);
  return !(da == 7 && db == 49 && cfg.a == 7);
}
