// LLVM's host side of device printf, built for x86-64 as a judge of ours
// (gpu_plugin::rpc::printf): LLVM libc's printf_core parser and converters, configured as
// LLVM's RPC server configures them, driven through the passes the server makes for each
// request. LLVM 22: libc/shared/rpc_server.h, included as it is, sets the options. LLVM 19
// (-DLLVM_19): libc/utils/gpu/server, whose CMakeLists.txt sets them on the command line, and
// printf_core's converter.cpp and writer.cpp are built beside this file. One difference on
// purpose: fetched strings go to the non-null %s arguments by position, as ours does (LLVM's
// server hands them to every %s in turn, null ones included).
//
// Built by fuzz/tests/printf_against_llvm.rs, with -mlong-double-64: the GPU's long double.
#ifdef LLVM_19
#include "src/__support/arg_list.h"
#include "src/stdio/printf_core/converter.h"
#include "src/stdio/printf_core/parser.h"
#include "src/stdio/printf_core/writer.h"
#else
#include "shared/rpc_server.h"
#endif

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

namespace printf_core = LIBC_NAMESPACE::printf_core;
namespace internal = LIBC_NAMESPACE::internal;

// The first pass: how many bytes of arguments the client is asked for.
template <bool packed> static uint64_t count_arguments(const char *format) {
  internal::DummyArgList<packed> counting;
  printf_core::Parser<internal::DummyArgList<packed> &> counter(format, counting);
  for (printf_core::FormatSection section = counter.get_next_section();
       !section.raw_string.empty(); section = counter.get_next_section())
    ;
  return counting.read_count();
}

// The last pass: the formatting, with the fetched strings in place of the device's pointers.
template <bool packed>
static int64_t format_with(const char *format, const void *args, uint64_t args_size,
                           const char *const *strings, uint64_t string_count, char *out,
                           uint64_t out_size) {
  // The argument area at an 8-byte aligned address (StructArgList aligns addresses, not
  // offsets) and zero beyond what the caller gave, so that an argument straddling the end
  // reads zeroes, not past the allocation.
  uint64_t counted = count_arguments<packed>(format);
  uint64_t room = (args_size > counted ? args_size : counted) + 16;
  void *area = aligned_alloc(16, (room + 15) / 16 * 16);
  memset(area, 0, room);
  if (args_size)
    memcpy(area, args, args_size);

#ifdef LLVM_19
  printf_core::WriteBuffer buffer(out, out_size);
  printf_core::Writer writer(&buffer);
#else
  printf_core::DropOverflowBuffer buffer(out, out_size);
  printf_core::Writer writer(buffer);
#endif
  internal::StructArgList<packed> arguments(area, args_size);
  printf_core::Parser<internal::StructArgList<packed>> parser(format, arguments);
  uint64_t next_string = 0;
  int result = 0;
  for (printf_core::FormatSection section = parser.get_next_section();
       !section.raw_string.empty(); section = parser.get_next_section()) {
    if (section.has_conv && section.conv_name == 's' && section.conv_val_ptr)
      section.conv_val_ptr = next_string < string_count
                                 ? const_cast<char *>(strings[next_string++])
                                 : nullptr;
    if (section.has_conv) {
      result = convert(&writer, section);
      if (result < 0)
        break;
    } else {
      writer.write(section.raw_string);
    }
  }
  free(area);
  return result < 0 ? result : static_cast<int64_t>(writer.get_chars_written());
}

// The bytes of arguments the server asks the client for.
extern "C" uint64_t llvm_printf_argument_bytes(const char *format, bool packed) {
  return packed ? count_arguments<true>(format) : count_arguments<false>(format);
}

// The formatted length (of which the first out_size bytes are in out), or LLVM's negative
// error code.
extern "C" int64_t llvm_printf_format(const char *format, const void *args, uint64_t args_size,
                                      bool packed, const char *const *strings,
                                      uint64_t string_count, char *out, uint64_t out_size) {
  return packed ? format_with<true>(format, args, args_size, strings, string_count, out, out_size)
                : format_with<false>(format, args, args_size, strings, string_count, out,
                                     out_size);
}
