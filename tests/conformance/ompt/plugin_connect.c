// RULE: ompt_libomptarget_connect hands a connecting plugin libomp's lookup function (through which it finds the tool's callbacks) only while a tool is attached, and calls the plugin's finalizer when the tool is finalized
// EXPECT: plugin initialized=1 lookup finds ompt_get_callback=1 target callback=registered
// EXPECT: plugin finalized=1
#include <omp-tools.h>
#include <omp.h>
#include <stdio.h>

void ompt_libomptarget_connect(ompt_start_tool_result_t *result);

static int plugin_inits, found_get_callback, target_registered;

static void on_target(ompt_target_t kind, ompt_scope_endpoint_t endpoint, int device_num,
                      ompt_data_t *task_data, ompt_id_t target_id, const void *code) {}

static int plugin_initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data) {
  plugin_inits++;
  ompt_get_callback_t get = (ompt_get_callback_t)lookup("ompt_get_callback");
  found_get_callback = get != 0;
  ompt_callback_t cb = 0;
  if (get && get(ompt_callback_target, &cb) && cb == (ompt_callback_t)on_target)
    target_registered = 1;
  return 0;
}

static void plugin_finalize(ompt_data_t *data) {
  printf("plugin finalized=1\n");
}

static int initialize(ompt_function_lookup_t lookup, int device, ompt_data_t *data) {
  ompt_set_callback_t set = (ompt_set_callback_t)lookup("ompt_set_callback");
  set(ompt_callback_target, (ompt_callback_t)on_target);
  return 1;
}

static void finalize(ompt_data_t *data) {}

ompt_start_tool_result_t *ompt_start_tool(unsigned int version, const char *runtime) {
  static ompt_start_tool_result_t result = {initialize, finalize, {0}};
  return &result;
}

int main(void) {
  int x = 0;
#pragma omp target map(tofrom: x)
  x = 1;
  static ompt_start_tool_result_t plugin = {plugin_initialize, plugin_finalize, {0}};
  ompt_libomptarget_connect(&plugin);
  ompt_libomptarget_connect(NULL);
  printf("plugin initialized=%d lookup finds ompt_get_callback=%d target callback=%s\n",
         plugin_inits, found_get_callback, target_registered ? "registered" : "missing");
  fflush(stdout);
  return !(x == 1 && plugin_inits == 1 && found_get_callback && target_registered);
}
