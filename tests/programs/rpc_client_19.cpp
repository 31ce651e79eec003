// LLVM 19's own RPC client (libc/src/__support/RPC/rpc.h of the LLVM 19 sources, the older
// protocol: 16-bit opcodes numbered by rpc_opcodes_t.h, the client reached through the pointer
// __llvm_libc_rpc_client), built for x86-64 as a shared library, so that tests/tests/rpc.rs
// drives our server as LLVM 19's GPU libc does. The functions have the names and arguments of
// rpc_client.cpp (LLVM 22's client) where LLVM 19 has the request; each makes it the way
// LLVM 19's GPU libc makes it (libc/src/stdio/gpu, libc/src/gpu/rpc_host_call.cpp).
#include "src/__support/RPC/rpc.h"
#include "include/llvm-libc-types/rpc_opcodes_t.h"

#include <stdint.h>
#include <string.h>

namespace rpc = LIBC_NAMESPACE::rpc;
using Client = rpc::Client;

static Client &client(void *bytes) { return *reinterpret_cast<Client *>(bytes); }

extern "C" {

uint64_t rpc_client_size() { return sizeof(Client); }

// puts/fputs/fwrite to stdout (0), stderr (1), stdout with a newline (2) or a stream (3).
uint64_t rpc_write(void *c, int where, uint64_t stream, const char *text, uint64_t size) {
  uint64_t written = 0;
  auto exchange = [&](Client::Port &port) {
    port.send_n(text, size);
    port.recv([&](rpc::Buffer *buffer) { written = buffer->data[0]; });
    port.close();
  };
  if (where == 0) {
    Client::Port port = client(c).open<RPC_WRITE_TO_STDOUT>();
    exchange(port);
  } else if (where == 1) {
    Client::Port port = client(c).open<RPC_WRITE_TO_STDERR>();
    exchange(port);
  } else if (where == 2) {
    Client::Port port = client(c).open<RPC_WRITE_TO_STDOUT_NEWLINE>();
    exchange(port);
  } else {
    Client::Port port = client(c).open<RPC_WRITE_TO_STREAM>();
    port.send([&](rpc::Buffer *buffer) { buffer->data[0] = stream; });
    exchange(port);
  }
  return written;
}

uint64_t rpc_fopen(void *c, const char *path, const char *mode) {
  Client::Port port = client(c).open<RPC_OPEN_FILE>();
  port.send_n(path, strlen(path) + 1);
  uint64_t file = 0;
  port.send_and_recv([&](rpc::Buffer *buffer) { memcpy(buffer->data, mode, strlen(mode) + 1); },
                     [&](rpc::Buffer *buffer) { file = buffer->data[0]; });
  port.close();
  return file;
}

// One-word requests: fclose (0), feof (1), ferror (2), ftell (3), fflush (4), clearerr (5).
uint64_t rpc_stream_op(void *c, int op, uint64_t stream) {
  uint64_t result = 0;
  auto exchange = [&](Client::Port &port) {
    port.send_and_recv([&](rpc::Buffer *buffer) { buffer->data[0] = stream; },
                       [&](rpc::Buffer *buffer) { result = buffer->data[0]; });
    port.close();
  };
  switch (op) {
  case 0: { Client::Port p = client(c).open<RPC_CLOSE_FILE>(); exchange(p); break; }
  case 1: { Client::Port p = client(c).open<RPC_FEOF>(); exchange(p); break; }
  case 2: { Client::Port p = client(c).open<RPC_FERROR>(); exchange(p); break; }
  case 3: { Client::Port p = client(c).open<RPC_FTELL>(); exchange(p); break; }
  case 4: { Client::Port p = client(c).open<RPC_FFLUSH>(); exchange(p); break; }
  default: { Client::Port p = client(c).open<RPC_CLEARERR>(); exchange(p); break; }
  }
  return result;
}

uint64_t rpc_fseek(void *c, uint64_t stream, long offset, int whence) {
  Client::Port port = client(c).open<RPC_FSEEK>();
  uint64_t result = 0;
  port.send_and_recv(
      [&](rpc::Buffer *buffer) {
        buffer->data[0] = stream;
        buffer->data[1] = static_cast<uint64_t>(offset);
        buffer->data[2] = static_cast<uint64_t>(whence);
      },
      [&](rpc::Buffer *buffer) { result = buffer->data[0]; });
  port.close();
  return result;
}

uint64_t rpc_ungetc(void *c, int ch, uint64_t stream) {
  Client::Port port = client(c).open<RPC_UNGETC>();
  uint64_t result = 0;
  port.send_and_recv(
      [&](rpc::Buffer *buffer) {
        buffer->data[0] = static_cast<uint64_t>(ch);
        buffer->data[1] = stream;
      },
      [&](rpc::Buffer *buffer) { result = buffer->data[0]; });
  port.close();
  return result;
}

// fread: `size` bytes into `out`; returns the bytes read.
uint64_t rpc_fread(void *c, uint64_t stream, void *out, uint64_t size) {
  Client::Port port = client(c).open<RPC_READ_FROM_STREAM>();
  uint64_t got = 0;
  port.send([=](rpc::Buffer *buffer) {
    buffer->data[0] = size;
    buffer->data[1] = stream;
  });
  void *dst = nullptr;
  port.recv_n(&dst, &got, [&](uint64_t) { return out; });
  port.recv([&](rpc::Buffer *buffer) { memcpy(&got, buffer->data, sizeof(got)); });
  port.close();
  return got;
}

// fgets: returns the bytes received (the line and its NUL; 0 at the end of the file).
uint64_t rpc_fgets(void *c, uint64_t stream, char *out, int size) {
  Client::Port port = client(c).open<RPC_READ_FGETS>();
  uint64_t got = 0;
  port.send([=](rpc::Buffer *buffer) {
    buffer->data[0] = static_cast<uint64_t>(size);
    buffer->data[1] = stream;
  });
  void *dst = nullptr;
  port.recv_n(&dst, &got, [&](uint64_t) { return out; });
  port.close();
  return got;
}

// remove (0); LLVM 19 has no system request.
uint64_t rpc_path_op(void *c, int op, const char *text) {
  if (op != 0)
    return ~0ull;
  Client::Port port = client(c).open<RPC_REMOVE>();
  port.send_n(text, strlen(text) + 1);
  uint64_t result = 0;
  port.recv([&](rpc::Buffer *buffer) { result = buffer->data[0]; });
  port.close();
  return result;
}

uint64_t rpc_malloc(void *c, uint64_t size) {
  Client::Port port = client(c).open<RPC_MALLOC>();
  uint64_t address = 0;
  port.send_and_recv([=](rpc::Buffer *buffer) { buffer->data[0] = size; },
                     [&](rpc::Buffer *buffer) { address = buffer->data[0]; });
  port.close();
  return address;
}

void rpc_free(void *c, uint64_t address) {
  Client::Port port = client(c).open<RPC_FREE>();
  port.send([=](rpc::Buffer *buffer) { buffer->data[0] = address; });
  port.close();
}

// LLVM 19's rpc_host_call: the function's result does not come back (0 is returned).
uint64_t rpc_host_call(void *c, void *fn, void *data, uint64_t size) {
  Client::Port port = client(c).open<RPC_HOST_CALL>();
  port.send_n(data, size);
  port.send([=](rpc::Buffer *buffer) { buffer->data[0] = reinterpret_cast<uintptr_t>(fn); });
  port.recv([](rpc::Buffer *) {});
  port.close();
  return 0;
}

// printf as LLVM 19's GPU libc sends it (vfprintf_utils.h), with the arguments already packed:
// to stdout (0), stderr (1) or a stream (2); `packed` picks the _PACKED opcodes.
int rpc_printf(void *c, int where, bool packed, uint64_t stream, const char *format,
               const void *args, uint64_t args_len) {
  auto exchange = [&](Client::Port &port) -> int {
    if (where == 2)
      port.send([&](rpc::Buffer *buffer) { buffer->data[0] = stream; });
    uint64_t args_size = 0;
    port.send_n(format, strlen(format) + 1);
    port.recv([&](rpc::Buffer *buffer) { args_size = buffer->data[0]; });
    if (args_size > args_len)
      args_size = args_len;
    port.send_n(args, args_size);
    uint32_t ret = 0;
    for (;;) {
      const char *str = nullptr;
      port.recv([&](rpc::Buffer *buffer) {
        ret = static_cast<uint32_t>(buffer->data[0]);
        str = reinterpret_cast<const char *>(buffer->data[1]);
      });
      if (!str)
        break;
      port.send_n(str, strlen(str) + 1);
    }
    port.close();
    return static_cast<int>(ret);
  };
  if (where == 0) {
    if (packed) {
      Client::Port p = client(c).open<RPC_PRINTF_TO_STDOUT_PACKED>();
      return exchange(p);
    }
    Client::Port p = client(c).open<RPC_PRINTF_TO_STDOUT>();
    return exchange(p);
  }
  if (where == 1) {
    Client::Port p = client(c).open<RPC_PRINTF_TO_STDERR>();
    return exchange(p);
  }
  Client::Port p = client(c).open<RPC_PRINTF_TO_STREAM>();
  return exchange(p);
}

// A request no server knows (past LLVM 19's last opcode): the server must report it and not
// answer (the call does not return; tests run it on a thread of its own).
void rpc_unknown(void *c) {
  Client::Port port = client(c).open<0x7007>();
  port.send([](rpc::Buffer *buffer) { buffer->data[0] = 1; });
  port.recv([](rpc::Buffer *) {});
  port.close();
}

// A damaged request: a write whose size no buffer may have.
void rpc_damaged(void *c) {
  Client::Port port = client(c).open<RPC_WRITE_TO_STDOUT>();
  port.send([](rpc::Buffer *buffer) { buffer->data[0] = ~0ull; });
  port.recv([](rpc::Buffer *) {});
  port.close();
}
}
