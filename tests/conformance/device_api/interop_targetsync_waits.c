// RULE: `interop use` (without nowait) and `interop destroy` on a targetsync object return only after the work the program queued on its native queue itself (CUDA: a host function on the CUstream) has run; on a device without a foreign runtime (the host devices) the object exists with no targetsync handle (omp_irc_no_value) and use/destroy still work
// NOT-ON-EMULATOR: it queues CUDA work itself and expects no foreign runtime on other devices, while the emulated HSA runtime's interop objects are HSA's (on the emulated CUDA driver alone, which exports cuLaunchHostFunc since 2026-11-28, it passed 4 runs of 4; on a GPU: scripts/gpu-run.sh)
// LLVM-DIFFERS: LLVM 19 crashes creating an interop object on a host device and never waits for the queue; LLVM 22 gives omp_interop_none on host devices, and its CUDA plugin has no sync barrier (fatal in use/destroy)
// EXPECT: interop targetsync ok
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

typedef int (*launch_host_func_t)(void *stream, void (*fn)(void *), void *data);
typedef int (*set_current_t)(void *context);

static void slow_step(void *flag) {
  usleep(300 * 1000);
  *(volatile int *)flag = 1;
}

int main(void) {
  int device = omp_get_default_device();
  omp_interop_t obj = omp_interop_none;
#pragma omp interop init(targetsync : obj) device(device)
  if (obj == omp_interop_none) {
    printf("no interop object for device %d\n", device);
    return 1;
  }
  int err = 0;
  intptr_t runtime = omp_get_interop_int(obj, omp_ipr_fr_id, &err);
  void *queue = omp_get_interop_ptr(obj, omp_ipr_targetsync, &err);
  if (runtime == omp_ifr_cuda) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    launch_host_func_t launch = cuda ? (launch_host_func_t)dlsym(cuda, "cuLaunchHostFunc") : 0;
    set_current_t set_current = cuda ? (set_current_t)dlsym(cuda, "cuCtxSetCurrent") : 0;
    void *context = omp_get_interop_ptr(obj, omp_ipr_device_context, &err);
    if (!launch || !set_current || !queue || !context || set_current(context) != 0) {
      printf("cannot queue work on the CUstream %p\n", queue);
      return 1;
    }
    volatile int used = 0, destroyed = 0;
    if (launch(queue, slow_step, (void *)&used) != 0)
      return 1;
#pragma omp interop use(obj)
    if (!used) {
      printf("use returned before the queued work ran\n");
      return 1;
    }
    if (launch(queue, slow_step, (void *)&destroyed) != 0)
      return 1;
#pragma omp interop destroy(obj)
    if (!destroyed) {
      printf("destroy returned before the queued work ran\n");
      return 1;
    }
  } else {
    if (runtime != 0 || queue != NULL || err != omp_irc_no_value) {
      printf("runtime %ld queue %p err %d: expected none\n", (long)runtime, queue, err);
      return 1;
    }
#pragma omp interop use(obj)
#pragma omp interop destroy(obj)
  }
  if (obj != omp_interop_none) {
    printf("destroy left the variable set\n");
    return 1;
  }
  printf("interop targetsync ok\n");
  return 0;
}
