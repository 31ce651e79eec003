// RULE: with EMI callbacks the tool's target_data and host_op_id are shared storage: what the tool stores at a construct's or operation's begin is what it sees in the operations inside and at the end, and an allocation's end reports the device address
// EXPECT: B1 A+ A- T+ T- S+ S- F+ F- D+ D- E1
// EXPECT: checks passed
#include <omp-tools.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

static char trace[512];
static int failures;
static uint64_t next_op = 100;
static ompt_data_t *construct_data;
static void *allocated;

static void fail(const char *what) {
  printf("FAILED: %s\n", what);
  failures++;
}

static void add(const char *event) {
  if (trace[0]) strcat(trace, " ");
  strcat(trace, event);
}

static void on_target_emi(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num,
                          ompt_data_t *task_data, ompt_data_t *target_task_data,
                          ompt_data_t *target_data, const void *code) {
  char event[8];
  snprintf(event, sizeof event, "%c%d", endpoint == ompt_scope_begin ? 'B' : 'E', (int)kind);
  add(event);
  if (!target_data || !code) fail("target_emi arguments");
  if (endpoint == ompt_scope_begin) {
    target_data->value = 4242;
    construct_data = target_data;
  } else if (target_data != construct_data || target_data->value != 4242) {
    fail("target_data at the end");
  }
}

static void on_data_op_emi(ompt_scope_endpoint_t endpoint, ompt_data_t *target_task_data,
                           ompt_data_t *target_data, ompt_id_t *host_op_id,
                           ompt_target_data_op_t op, void *src, int src_device, void *dst,
                           int dst_device, size_t bytes, const void *code) {
  static const char *names[] = {"?", "A", "T", "F", "D"};
  char event[8];
  snprintf(event, sizeof event, "%s%c", op <= 4 ? names[op] : "?",
           endpoint == ompt_scope_begin ? '+' : '-');
  add(event);
  if (target_data != construct_data || target_data->value != 4242)
    fail("data operation sees another target_data");
  if (endpoint == ompt_scope_begin) {
    *host_op_id = ++next_op;
  } else if (*host_op_id != next_op) {
    fail("host_op_id changed between begin and end");
  }
  if (op == ompt_target_data_alloc && endpoint == ompt_scope_end) allocated = dst;
  if (op == ompt_target_data_alloc && endpoint == ompt_scope_begin && dst) fail("alloc begin has an address");
  if (op == ompt_target_data_transfer_to_device && dst != allocated) fail("transfer target is not the allocation");
  if (op == ompt_target_data_delete && src != allocated) fail("delete is not the allocation");
}

static void on_submit_emi(ompt_scope_endpoint_t endpoint, ompt_data_t *target_data,
                          ompt_id_t *host_op_id, unsigned int teams) {
  add(endpoint == ompt_scope_begin ? "S+" : "S-");
  if (target_data != construct_data || target_data->value != 4242) fail("submit target_data");
  if (endpoint == ompt_scope_begin) *host_op_id = ++next_op;
  else if (*host_op_id != next_op) fail("submit host_op_id");
}

static int initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data) {
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_target_emi, (ompt_callback_t)on_target_emi);
  set(ompt_callback_target_data_op_emi, (ompt_callback_t)on_data_op_emi);
  set(ompt_callback_target_submit_emi, (ompt_callback_t)on_submit_emi);
  return 1;
}

static void finalize(ompt_data_t *data) {}

ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime) {
  static ompt_start_tool_result_t result = {initialize, finalize, {0}};
  return &result;
}

int main(void) {
  int a[32];
  for (int i = 0; i < 32; i++) a[i] = i;
#pragma omp target map(tofrom: a)
  for (int i = 0; i < 32; i++) a[i] += 5;
  printf("%s\n", trace);
  for (int i = 0; i < 32; i++)
    if (a[i] != i + 5) fail("results");
  if (!failures) printf("checks passed\n");
  return failures != 0;
}
