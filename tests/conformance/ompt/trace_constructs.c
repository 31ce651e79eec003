// RULE: an OMPT tool sees each target construct as begin and end events around its data operations and kernel submission, in LLVM's order, each event carrying the construct's id and the program's call site
// NOT-ON-EMULATOR: cuda: clang-19's NVPTX back end emits PTX for this program that ptxas refuses (call has wrong number of parameters), so it has no sm_90 build
// NOT-ON-EMULATOR: amdgpu: clang-19's gfx90a device compilation does not see dladdr in <dlfcn.h> (the host helper in_program is compiled for the device too), so it has no gfx90a build
// EXPECT: devices initialised=4 images loaded=1
// EXPECT: target: B1 A T A T S2 F F D D E1
// EXPECT: target data: B2 A T E2 | B1 S2 E1 | B4 F E4 | B3 F D E3
// EXPECT: api: A T F D
// EXPECT: checks passed
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp-tools.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

static char trace[512];
static int failures, inits, loads, host;
static ompt_id_t construct_id, last_op_id;
static const void *construct_code;
static void *host_a, *host_b, *dev_a, *dev_b;

static void fail(const char *what) {
  printf("FAILED: %s\n", what);
  failures++;
}

static void add(const char *event) {
  if (trace[0]) strcat(trace, " ");
  strcat(trace, event);
}

static int in_program(const void *code) {
  Dl_info code_info, main_info;
  extern int main(void);
  return code && dladdr(code, &code_info) && dladdr((void *)main, &main_info) &&
         code_info.dli_fbase == main_info.dli_fbase;
}

static void on_device_initialize(int device_num, const char *type, ompt_device_t *device,
                                 ompt_function_lookup_t lookup, const char *doc) {
  inits++;
  if (!type || !device) fail("device_initialize arguments");
}

static void on_device_load(int device_num, const char *file, int64_t offset, void *vma,
                           size_t bytes, void *host_addr, void *device_addr, uint64_t module) {
  loads++;
  if (!bytes || !host_addr) fail("device_load arguments");
}

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num,
                      ompt_data_t *task_data, ompt_id_t target_id, const void *code) {
  char event[8];
  snprintf(event, sizeof event, "%c%d", endpoint == ompt_scope_begin ? 'B' : 'E', (int)kind);
  add(event);
  if (device_num != 0) fail("target device number");
  if (!in_program(code)) fail("target codeptr_ra outside the program");
  if (endpoint == ompt_scope_begin) {
    construct_id = target_id;
    construct_code = code;
  } else if (target_id != construct_id || code != construct_code) {
    fail("end event differs from its begin");
  }
}

static void on_data_op(ompt_id_t target_id, ompt_id_t host_op_id, ompt_target_data_op_t op,
                       void *src, int src_device, void *dst, int dst_device, size_t bytes,
                       const void *code) {
  static const char *names[] = {"?", "A", "T", "F", "D", "AS", "DS"};
  add(op <= 6 ? names[op] : "?");
  if (target_id != construct_id) fail("data operation outside its construct's id");
  if (code != construct_code && construct_code) fail("data operation call site");
  if (!in_program(code)) fail("data operation codeptr_ra outside the program");
  if (host_op_id <= last_op_id) fail("host_op_id not new");
  last_op_id = host_op_id;
  switch (op) {
  case ompt_target_data_alloc:
    if (src_device != host || dst_device != 0 || bytes != sizeof(int) * 64) fail("alloc");
    break;
  case ompt_target_data_transfer_to_device:
    if (src_device != host || dst_device != 0) fail("transfer to device numbers");
    if (src == host_a) dev_a = dst;
    if (src == host_b) dev_b = dst;
    if (!dst || (src != host_a && src != host_b)) fail("transfer to device addresses");
    break;
  case ompt_target_data_transfer_from_device:
    if (src_device != 0 || dst_device != host) fail("transfer from device numbers");
    if (!((dst == host_a && src == dev_a) || (dst == host_b && src == dev_b)))
      fail("transfer from device addresses");
    break;
  case ompt_target_data_delete:
    if (src_device != 0 || (src != dev_a && src != dev_b)) fail("delete");
    break;
  default:
    fail("unexpected data operation");
  }
}

static void on_submit(ompt_id_t target_id, ompt_id_t host_op_id, unsigned int teams) {
  char event[16];
  snprintf(event, sizeof event, "S%u", teams);
  add(event);
  if (target_id != construct_id) fail("submit outside its construct's id");
  if (host_op_id <= last_op_id) fail("submit host_op_id not new");
  last_op_id = host_op_id;
}

static int initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data) {
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_device_initialize, (ompt_callback_t)on_device_initialize);
  set(ompt_callback_device_load, (ompt_callback_t)on_device_load);
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
  int a[64], b[64];
  host = omp_get_initial_device();
  host_a = a;
  host_b = b;
  for (int i = 0; i < 64; i++) a[i] = i, b[i] = 0;

#pragma omp target teams distribute parallel for num_teams(2) map(tofrom: a, b)
  for (int i = 0; i < 64; i++) b[i] = a[i] + 1;
  printf("devices initialised=%d images loaded=%d\n", inits, loads);
  printf("target: %s\n", trace);

  trace[0] = 0;
  construct_code = 0;
#pragma omp target data map(tofrom: a)
  {
    strcat(trace, " |");
#pragma omp target teams distribute parallel for num_teams(2) map(tofrom: a)
    for (int i = 0; i < 64; i++) a[i] *= 2;
    strcat(trace, " |");
#pragma omp target update from(a)
    strcat(trace, " |");
  }
  printf("target data: %s\n", trace);

  trace[0] = 0;
  construct_id = 0;
  construct_code = 0;
  int *d = omp_target_alloc(sizeof(int) * 64, 0);
  dev_a = d;
  omp_target_memcpy(d, a, sizeof(int) * 64, 0, 0, 0, host);
  omp_target_memcpy(a, d, sizeof(int) * 64, 0, 0, host, 0);
  omp_target_free(d, 0);
  printf("api: %s\n", trace);

  for (int i = 0; i < 64; i++)
    if (b[i] != i + 1 || a[i] != 2 * i) fail("results");
  if (!failures) printf("checks passed\n");
  return failures != 0;
}
// NEEDS: 4 devices
