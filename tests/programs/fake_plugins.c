// Built twice by the tests as shared libraries that are not valid omptarget plugins:
// with -DOTHER_MAJOR it claims plugin ABI 2.0; without, it has no ABI symbol at all.
#ifdef OTHER_MAJOR
struct AbiVersion { unsigned major, minor; };
const struct AbiVersion omptarget_plugin_abi_version = {2, 0};
#endif
int some_function(void) { return 1; }
