// RULE: OMPT events of target constructs running at once on several threads (nowait tasks) are each attributed to their own construct: every data operation and submission carries the id of the construct open on its thread
// EXPECT: constructs=32 complete=32
// EXPECT: checks passed
#include <omp-tools.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>

#define N 32
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int failures, constructs, complete;
static __thread ompt_id_t open_id;
static __thread int ops;

static void fail(const char *what) {
  pthread_mutex_lock(&lock);
  printf("FAILED: %s\n", what);
  failures++;
  pthread_mutex_unlock(&lock);
}

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num,
                      ompt_data_t *task_data, ompt_id_t target_id, const void *code) {
  if (kind != ompt_target) return;
  if (endpoint == ompt_scope_begin) {
    if (open_id) fail("construct begins inside another on the same thread");
    open_id = target_id;
    ops = 0;
    pthread_mutex_lock(&lock);
    constructs++;
    pthread_mutex_unlock(&lock);
  } else {
    if (target_id != open_id) fail("end of a construct not open on this thread");
    pthread_mutex_lock(&lock);
    if (ops == 5) complete++; /* alloc, to, submit, from, delete */
    pthread_mutex_unlock(&lock);
    open_id = 0;
  }
}

static void on_data_op(ompt_id_t target_id, ompt_id_t host_op_id, ompt_target_data_op_t op,
                       void *src, int src_device, void *dst, int dst_device, size_t bytes,
                       const void *code) {
  if (!open_id) return;
  if (target_id != open_id) fail("data operation carries another construct's id");
  ops++;
}

static void on_submit(ompt_id_t target_id, ompt_id_t host_op_id, unsigned int teams) {
  if (target_id != open_id) fail("submission carries another construct's id");
  ops++;
}

static int initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data) {
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_target, (ompt_callback_t)on_target);
  set(ompt_callback_target_data_op, (ompt_callback_t)on_data_op);
  set(ompt_callback_target_submit, (ompt_callback_t)on_submit);
  return 1;
}

static void finalize(ompt_data_t *data) {}

ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime) {
  static ompt_start_tool_result_t result = {initialize, finalize, {0}};
  return &result;
}

int main(void) {
  static int values[N][16];
#pragma omp parallel num_threads(2)
#pragma omp single
  for (int n = 0; n < N; n++) {
    int *v = values[n];
#pragma omp target map(tofrom: v[0:16]) nowait
    for (int i = 0; i < 16; i++) v[i] = n * 100 + i;
  }
  for (int n = 0; n < N; n++)
    for (int i = 0; i < 16; i++)
      if (values[n][i] != n * 100 + i) fail("results");
  printf("constructs=%d complete=%d\n", constructs, complete);
  if (!failures) printf("checks passed\n");
  return failures != 0;
}
