// LLVM 22's interop entry points, called as a compiler (or flang) would: __tgt_interop_get
// with a preference list and a context, __tgt_interop_use60, __tgt_interop_release, implicit
// (runtime-owned, per-thread) objects and __tgt_target_sync, which libomp 22 calls at taskwait
// and barriers. The structures are those of LLVM 22's offload/include/OpenMP/InteropAPI.h.
// EXPECT: explicit ok
// EXPECT: implicit ok
// EXPECT: errors ok
// EXPECT: interop60 ok
// EXPECT: implicit object released at shutdown
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
  int32_t fr_id;
  uint32_t attrs; // bit 0: inorder
  int64_t impl_attrs;
} interop_spec_t;
typedef struct {
  uint32_t version;
  uint32_t flags; // bit 0: implicit, bit 1: nowait
  int32_t gtid;
} interop_ctx_t;
typedef struct {
  int32_t ndeps, ndeps_noalias;
  void *deplist, *noalias_deplist;
} dep_pack_t;
enum { TARGET = 0, TARGETSYNC = 1, IMPLICIT = 1, NOWAIT = 2 };

void *__tgt_interop_get(void *loc, int32_t type, int64_t device, int32_t num_prefers,
                        interop_spec_t *prefers, interop_ctx_t *ctx, dep_pack_t *deps);
int __tgt_interop_use60(void *loc, void *interop, interop_ctx_t *ctx, dep_pack_t *deps);
int __tgt_interop_release(void *loc, void *interop, interop_ctx_t *ctx, dep_pack_t *deps);
void __tgt_target_sync(void *loc, int gtid, void *current_task, void *event);
typedef void ompx_interop_cb_t(omp_interop_t interop, void *data);
int ompx_interop_add_completion_callback(omp_interop_t, ompx_interop_cb_t *, void *);
int __kmpc_global_thread_num(void *loc);

static int failures;
#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      printf("FAILED line %d: %s\n", __LINE__, #cond);                                     \
      failures++;                                                                          \
    }                                                                                      \
  } while (0)

static void at_shutdown(omp_interop_t interop, void *data) {
  (void)interop;
  (void)data;
  printf("implicit object released at shutdown\n");
}

static int completions;
static void on_completion(omp_interop_t interop, void *data) {
  (void)interop;
  completions += *(int *)data;
}

int main(void) {
  int gtid = __kmpc_global_thread_num(NULL);
  int one = 1, err;

  // Explicit objects: the preferences name runtimes the host lacks, so its own ("none") is
  // chosen; the object still carries the device and waits.
  interop_spec_t prefers[2] = {{1 /* cuda */, 1, 0}, {5 /* hip */, 0, 7}};
  interop_ctx_t ctx = {0, 0, gtid};
  void *obj = __tgt_interop_get(NULL, TARGETSYNC, 1, 2, prefers, &ctx, NULL);
  CHECK(obj != NULL);
  CHECK(omp_get_interop_int(obj, omp_ipr_device_num, &err) == 1 && err == 0);
  CHECK(omp_get_interop_int(obj, omp_ipr_fr_id, &err) == 0 && err == 0);
  CHECK(ompx_interop_add_completion_callback(obj, on_completion, &one) == 0);
  interop_ctx_t nowait = {0, NOWAIT, gtid};
  CHECK(__tgt_interop_use60(NULL, obj, &nowait, NULL) == 0);
  CHECK(completions == 0);
  CHECK(__tgt_interop_use60(NULL, obj, &ctx, NULL) == 0);
  CHECK(completions == 1);
  CHECK(ompx_interop_add_completion_callback(obj, on_completion, &one) == 0);
  CHECK(__tgt_interop_release(NULL, obj, &ctx, NULL) == 0);
  CHECK(completions == 2);
  void *target_obj = __tgt_interop_get(NULL, TARGET, -1, 0, NULL, &ctx, NULL);
  CHECK(target_obj != NULL);
  CHECK(omp_get_interop_int(target_obj, omp_ipr_device_num, &err) ==
        omp_get_default_device());
  CHECK(__tgt_interop_release(NULL, target_obj, &ctx, NULL) == 0);
  if (!failures)
    printf("explicit ok\n");

  // Implicit objects belong to the runtime and the thread: a second request reuses the
  // first; __tgt_target_sync waits for the ones used since their last wait (running their
  // callbacks), and only for the calling thread's.
  interop_ctx_t implicit = {0, IMPLICIT, gtid};
  void *a = __tgt_interop_get(NULL, TARGETSYNC, 0, 0, NULL, &implicit, NULL);
  void *b = __tgt_interop_get(NULL, TARGETSYNC, 0, 0, NULL, &implicit, NULL);
  CHECK(a != NULL && a == b);
  interop_ctx_t other_thread = {0, IMPLICIT, gtid + 1000};
  void *c = __tgt_interop_get(NULL, TARGETSYNC, 0, 0, NULL, &other_thread, NULL);
  CHECK(c != NULL && c != a);
  CHECK(ompx_interop_add_completion_callback(a, on_completion, &one) == 0);
  CHECK(ompx_interop_add_completion_callback(c, on_completion, &one) == 0);
  completions = 0;
  __tgt_target_sync(NULL, gtid, NULL, NULL);
  CHECK(completions == 1);
  // Clean now: a second sync waits for nothing.
  CHECK(ompx_interop_add_completion_callback(a, on_completion, &one) == 0);
  __tgt_target_sync(NULL, gtid, NULL, NULL);
  CHECK(completions == 1);
  // Used again (a new request marks it): waited for at the next sync.
  CHECK(__tgt_interop_get(NULL, TARGETSYNC, 0, 0, NULL, &implicit, NULL) == a);
  __tgt_target_sync(NULL, gtid, NULL, NULL);
  CHECK(completions == 2);
  __tgt_target_sync(NULL, gtid + 1000, NULL, NULL);
  CHECK(completions == 3);
  CHECK(__tgt_interop_release(NULL, a, &ctx, NULL) == 0);
  CHECK(__tgt_interop_release(NULL, c, &ctx, NULL) == 0);
  if (!failures)
    printf("implicit ok\n");

  // omp_interop_none and objects that do not exist (any more) fail.
  CHECK(__tgt_interop_use60(NULL, NULL, &ctx, NULL) != 0);
  CHECK(__tgt_interop_release(NULL, NULL, &ctx, NULL) != 0);
  CHECK(__tgt_interop_release(NULL, a, &ctx, NULL) != 0);
  CHECK(__tgt_interop_get(NULL, TARGET, 9999, 0, NULL, &ctx, NULL) == NULL);
  CHECK(__tgt_interop_get(NULL, 7, 0, 0, NULL, &ctx, NULL) == NULL);
  if (!failures)
    printf("errors ok\n");

  if (failures)
    return 1;
  printf("interop60 ok\n");
  // An implicit object left in use belongs to the runtime, which waits for it and releases it
  // when the program's offload library is unregistered (at exit).
  void *left = __tgt_interop_get(NULL, TARGETSYNC, 0, 0, NULL, &implicit, NULL);
  ompx_interop_add_completion_callback(left, at_shutdown, NULL);
  return 0;
}
