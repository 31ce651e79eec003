// A seed for the fuzzer's plugin-library corpus: a shared library with what the runtime's
// file check looks for (the ABI version symbol), functions, data and relocations, as a plugin
// built by any C toolchain has. Real plugins are the same format, a megabyte larger.
struct abi_version { unsigned major, minor; };
const struct abi_version omptarget_plugin_abi_version = {1, 4};

static int calls;
int *counter_address = &calls;

int omptarget_plugin_may_run_target(const unsigned char *triple, unsigned long len) {
  calls++;
  return len > 6 && triple[0] == 'x';
}
