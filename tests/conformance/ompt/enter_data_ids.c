// RULE: every target construct reported to a non-EMI OMPT tool has its own non-zero target_id, enter data included, and its data operations carry it
// LLVM-DIFFERS: LLVM 19 gives `target enter data` the target_id 0 (it never assigns one for that construct), so a tool cannot tell its operations from those outside any construct; we give it a fresh id like every other construct
// EXPECT: enter=ok exit=ok update=ok distinct=ok
#include <omp-tools.h>
#include <omp.h>
#include <stdio.h>

static ompt_id_t ids[8], op_ids[8];
static int kinds[8], count, failures;

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num,
                      ompt_data_t *task_data, ompt_id_t target_id, const void *code) {
  if (endpoint == ompt_scope_begin && count < 8) {
    kinds[count] = kind;
    ids[count++] = target_id;
  }
}

static void on_data_op(ompt_id_t target_id, ompt_id_t host_op_id, ompt_target_data_op_t op,
                       void *src, int src_device, void *dst, int dst_device, size_t bytes,
                       const void *code) {
  if (count && target_id != ids[count - 1]) failures++;
  if (count) op_ids[count - 1] = target_id;
}

static int initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data) {
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_target, (ompt_callback_t)on_target);
  set(ompt_callback_target_data_op, (ompt_callback_t)on_data_op);
  return 1;
}

static void finalize(ompt_data_t *data) {}

ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime) {
  static ompt_start_tool_result_t result = {initialize, finalize, {0}};
  return &result;
}

static const char *ok(int i, int kind) {
  return i < count && kinds[i] == kind && ids[i] != 0 && op_ids[i] == ids[i] ? "ok" : "WRONG";
}

int main(void) {
  int a[8] = {0};
#pragma omp target enter data map(to: a)
#pragma omp target update to(a)
#pragma omp target exit data map(from: a)
  int distinct = count == 3 && ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2];
  printf("enter=%s exit=%s update=%s distinct=%s\n", ok(0, ompt_target_enter_data),
         ok(2, ompt_target_exit_data), ok(1, ompt_target_update), distinct ? "ok" : "WRONG");
  int all_ok = ok(0, ompt_target_enter_data)[0] == 'o' && ok(1, ompt_target_update)[0] == 'o' &&
               ok(2, ompt_target_exit_data)[0] == 'o';
  return failures != 0 || !distinct || !all_ok;
}
