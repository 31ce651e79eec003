// #pragma omp interop init/use/destroy (clang emits LLVM 19's __tgt_interop_init/use/destroy)
// and the property routines (libomp's omp_get_interop_* forward to the offload runtime).
// On a host device: no foreign runtime, so the handle properties have no value.
// Prints "vendor <name>" and "fr <name>" for the caller to check (host: llvm/none; a plugin
// older than ABI 1.2: unknown/none).
// EXPECT: properties ok
// EXPECT: callbacks ok
// EXPECT: dependences ok
// EXPECT: destroy ok
// EXPECT: interop ok
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <dlfcn.h>
#include <unistd.h>

// LLVM 22's extension, declared by no omp.h and absent from LLVM 19's runtime (which clang-19
// links against): looked up at run time.
typedef void ompx_interop_cb_t(omp_interop_t interop, void *data);
typedef int add_callback_t(omp_interop_t interop, ompx_interop_cb_t *cb, void *data);
static add_callback_t *ompx_interop_add_completion_callback;

static int failures;
#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      printf("FAILED line %d: %s\n", __LINE__, #cond);                                     \
      failures++;                                                                          \
    }                                                                                      \
  } while (0)

static int completions;
static omp_interop_t completed_object;
static void on_completion(omp_interop_t interop, void *data) {
  completions += *(int *)data;
  completed_object = interop;
}

static void check_properties(omp_interop_t obj, int device) {
  int err = 99;
  CHECK(omp_get_interop_int(obj, omp_ipr_fr_id, &err) == 0 && err == omp_irc_success);
  const char *fr = omp_get_interop_str(obj, omp_ipr_fr_name, &err);
  CHECK(fr && err == omp_irc_success);
  printf("fr %s\n", fr ? fr : "(null)");
  const char *vendor = omp_get_interop_str(obj, omp_ipr_vendor_name, &err);
  CHECK(vendor && err == omp_irc_success);
  printf("vendor %s\n", vendor ? vendor : "(null)");
  CHECK(omp_get_interop_int(obj, omp_ipr_device_num, &err) == device && err == 0);
  // No foreign runtime: the handles have no value.
  CHECK(omp_get_interop_ptr(obj, omp_ipr_device, &err) == NULL && err == omp_irc_no_value);
  CHECK(omp_get_interop_ptr(obj, omp_ipr_device_context, &err) == NULL &&
        err == omp_irc_no_value);
  CHECK(omp_get_interop_ptr(obj, omp_ipr_targetsync, &err) == NULL &&
        err == omp_irc_no_value);
  // The wrong routine names the right one; ids outside the spec's are out of range.
  CHECK(omp_get_interop_int(obj, omp_ipr_fr_name, &err) == 0 && err == omp_irc_type_str);
  CHECK(omp_get_interop_str(obj, omp_ipr_device_num, &err) == NULL &&
        err == omp_irc_type_int);
  CHECK(omp_get_interop_int(obj, omp_ipr_targetsync, &err) == 0 && err == omp_irc_type_ptr);
  CHECK(omp_get_interop_int(obj, (omp_interop_property_t)0, &err) == 0 &&
        err == omp_irc_out_of_range);
  CHECK(omp_get_interop_int(obj, (omp_interop_property_t)-10, &err) == 0 &&
        err == omp_irc_out_of_range);
  const char *name = omp_get_interop_name(obj, omp_ipr_targetsync);
  CHECK(name && strcmp(name, "targetsync") == 0);
  CHECK(omp_get_interop_type_desc(obj, omp_ipr_fr_name) != NULL);
  CHECK(omp_get_interop_name(obj, (omp_interop_property_t)-10) == NULL);
  // A null err pointer is allowed.
  CHECK(omp_get_interop_int(obj, omp_ipr_device_num, NULL) == device);
}

int main(void) {
  int device = 0;
  omp_interop_t sync_obj = omp_interop_none, target_obj = omp_interop_none;
#pragma omp interop init(targetsync : sync_obj) device(device)
#pragma omp interop init(target : target_obj) device(device)
  CHECK(sync_obj != omp_interop_none && target_obj != omp_interop_none);
  if (sync_obj == omp_interop_none || target_obj == omp_interop_none) {
    printf("no interop objects\n");
    return 1;
  }
  check_properties(sync_obj, device);
  check_properties(target_obj, device);
  int err = 99;
  CHECK(omp_get_interop_int(omp_interop_none, omp_ipr_fr_id, &err) == 0 &&
        err == omp_irc_empty);
  if (!failures)
    printf("properties ok\n");

  ompx_interop_add_completion_callback =
      (add_callback_t *)dlsym(RTLD_DEFAULT, "ompx_interop_add_completion_callback");
  if (!ompx_interop_add_completion_callback) {
    printf("no ompx_interop_add_completion_callback\n");
    return 1;
  }
  // Completion callbacks run when the object's work is waited for: a use without nowait.
  int one = 1;
  CHECK(ompx_interop_add_completion_callback(sync_obj, on_completion, &one) ==
        omp_irc_success);
  CHECK(completions == 0);
#pragma omp interop use(sync_obj)
  CHECK(completions == 1 && completed_object == sync_obj);
  CHECK(ompx_interop_add_completion_callback(sync_obj, on_completion, &one) == 0);
#pragma omp interop use(sync_obj) nowait
  CHECK(completions == 1);
  CHECK(ompx_interop_add_completion_callback(omp_interop_none, on_completion, &one) ==
        omp_irc_other);
  if (!failures)
    printf("callbacks ok\n");

  // depend clauses: the use waits for the task that produces x.
  int x = 0, seen = -1;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp task depend(out : x) shared(x)
    {
      usleep(200 * 1000);
      x = 42;
    }
#pragma omp interop use(sync_obj) depend(in : x)
    seen = x;
  }
  CHECK(seen == 42);
  if (!failures)
    printf("dependences ok\n");

  // destroy waits (the pending callback runs) and resets the variables.
#pragma omp interop destroy(sync_obj)
  CHECK(completions == 2);
  CHECK(sync_obj == omp_interop_none);
#pragma omp interop destroy(target_obj)
  CHECK(target_obj == omp_interop_none);
  // The host is not an offload device: omp_interop_none.
  omp_interop_t host_obj = omp_interop_none;
  int host = omp_get_initial_device();
#pragma omp interop init(targetsync : host_obj) device(host)
  CHECK(host_obj == omp_interop_none);
  if (!failures)
    printf("destroy ok\n");

  if (failures)
    return 1;
  printf("interop ok\n");
  return 0;
}
