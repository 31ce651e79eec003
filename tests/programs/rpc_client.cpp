// LLVM 22's own RPC client (libc/shared/rpc.h of the LLVM 22 sources), built for x86-64 as a
// shared library, so that tests/tests/rpc.rs drives our server with the client every GPU
// program runs. Each function makes one request the way LLVM's device code makes it (its GPU
// libc's stdio, stdlib and printf, and the OpenMP device runtime's __llvm_omp_host_call); the
// client object is the bytes our server writes into a device's __llvm_rpc_client.
#include "rpc.h"
#include "rpc_opcodes.h"
#include "Shared/RPCOpcodes.h"

#include <stdint.h>
#include <string.h>

using Client = rpc::Client;

static Client &client(void *bytes) { return *reinterpret_cast<Client *>(bytes); }

extern "C" {

uint64_t rpc_client_size() { return sizeof(Client); }

uint64_t rpc_increment(void *c, uint64_t value) {
  Client::Port port = client(c).open<LIBC_TEST_INCREMENT>();
  port.send_and_recv([=](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = value; },
                     [&](rpc::Buffer *buffer, uint32_t) { value = buffer->data[0]; });
  port.close();
  return value;
}

// LIBC_TEST_INTERFACE, as LLVM's own protocol test drives it: each side adds one at each of
// its sends; the answer is start + 6 when the client ends with a send, else start + 7.
uint64_t rpc_interface(void *c, bool end_with_send, uint64_t start) {
  Client::Port port = client(c).open<LIBC_TEST_INTERFACE>();
  uint64_t cnt = start;
  port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = end_with_send; });
  port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = cnt; });
  port.recv([&](rpc::Buffer *buffer, uint32_t) { cnt = buffer->data[0]; });
  port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = cnt + 1; });
  port.recv([&](rpc::Buffer *buffer, uint32_t) { cnt = buffer->data[0]; });
  port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = cnt + 1; });
  port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = cnt + 1; });
  port.recv([&](rpc::Buffer *buffer, uint32_t) { cnt = buffer->data[0]; });
  port.recv([&](rpc::Buffer *buffer, uint32_t) { cnt = buffer->data[0]; });
  if (end_with_send)
    port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = cnt + 1; });
  else
    port.recv([&](rpc::Buffer *buffer, uint32_t) { cnt = buffer->data[0]; });
  port.close();
  return cnt;
}

// LIBC_TEST_STREAM: `size` bytes there and back; returns the size that came back.
uint64_t rpc_echo(void *c, const void *data, uint64_t size, void *out) {
  Client::Port port = client(c).open<LIBC_TEST_STREAM>();
  port.send_n(data, size);
  uint64_t back = 0;
  void *dst = nullptr;
  port.recv_n(&dst, &back, [&](uint64_t) { return out; });
  port.close();
  return back;
}

// puts/fputs/fwrite to stdout (0), stderr (1), stdout with a newline (2) or a stream (3).
uint64_t rpc_write(void *c, int where, uint64_t stream, const char *text, uint64_t size) {
  uint64_t written = 0;
  auto exchange = [&](Client::Port &port) {
    port.send_n(text, size);
    port.recv([&](rpc::Buffer *buffer, uint32_t) { written = buffer->data[0]; });
    port.close();
  };
  if (where == 0) {
    Client::Port port = client(c).open<LIBC_WRITE_TO_STDOUT>();
    exchange(port);
  } else if (where == 1) {
    Client::Port port = client(c).open<LIBC_WRITE_TO_STDERR>();
    exchange(port);
  } else if (where == 2) {
    Client::Port port = client(c).open<LIBC_WRITE_TO_STDOUT_NEWLINE>();
    exchange(port);
  } else {
    Client::Port port = client(c).open<LIBC_WRITE_TO_STREAM>();
    port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = stream; });
    exchange(port);
  }
  return written;
}

uint64_t rpc_fopen(void *c, const char *path, const char *mode) {
  Client::Port port = client(c).open<LIBC_OPEN_FILE>();
  port.send_n(path, strlen(path) + 1);
  uint64_t file = 0;
  port.send_and_recv(
      [&](rpc::Buffer *buffer, uint32_t) {
        memcpy(buffer->data, mode, strlen(mode) + 1);
      },
      [&](rpc::Buffer *buffer, uint32_t) { file = buffer->data[0]; });
  port.close();
  return file;
}

// One-word requests: fclose (0), feof (1), ferror (2), ftell (3), fflush (4), clearerr (5).
uint64_t rpc_stream_op(void *c, int op, uint64_t stream) {
  uint64_t result = 0;
  auto exchange = [&](Client::Port &port) {
    port.send_and_recv([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = stream; },
                       [&](rpc::Buffer *buffer, uint32_t) { result = buffer->data[0]; });
    port.close();
  };
  switch (op) {
  case 0: { Client::Port p = client(c).open<LIBC_CLOSE_FILE>(); exchange(p); break; }
  case 1: { Client::Port p = client(c).open<LIBC_FEOF>(); exchange(p); break; }
  case 2: { Client::Port p = client(c).open<LIBC_FERROR>(); exchange(p); break; }
  case 3: { Client::Port p = client(c).open<LIBC_FTELL>(); exchange(p); break; }
  case 4: { Client::Port p = client(c).open<LIBC_FFLUSH>(); exchange(p); break; }
  default: { Client::Port p = client(c).open<LIBC_CLEARERR>(); exchange(p); break; }
  }
  return result;
}

uint64_t rpc_fseek(void *c, uint64_t stream, long offset, int whence) {
  Client::Port port = client(c).open<LIBC_FSEEK>();
  uint64_t result = 0;
  port.send_and_recv(
      [&](rpc::Buffer *buffer, uint32_t) {
        buffer->data[0] = stream;
        buffer->data[1] = static_cast<uint64_t>(offset);
        buffer->data[2] = static_cast<uint64_t>(whence);
      },
      [&](rpc::Buffer *buffer, uint32_t) { result = buffer->data[0]; });
  port.close();
  return result;
}

uint64_t rpc_ungetc(void *c, int ch, uint64_t stream) {
  Client::Port port = client(c).open<LIBC_UNGETC>();
  uint64_t result = 0;
  port.send_and_recv(
      [&](rpc::Buffer *buffer, uint32_t) {
        buffer->data[0] = static_cast<uint64_t>(ch);
        buffer->data[1] = stream;
      },
      [&](rpc::Buffer *buffer, uint32_t) { result = buffer->data[0]; });
  port.close();
  return result;
}

// fread: `size` bytes into `out`; returns the bytes read.
uint64_t rpc_fread(void *c, uint64_t stream, void *out, uint64_t size) {
  Client::Port port = client(c).open<LIBC_READ_FROM_STREAM>();
  uint64_t got = 0;
  port.send([=](rpc::Buffer *buffer, uint32_t) {
    buffer->data[0] = size;
    buffer->data[1] = stream;
  });
  void *dst = nullptr;
  port.recv_n(&dst, &got, [&](uint64_t) { return out; });
  port.recv([&](rpc::Buffer *buffer, uint32_t) { memcpy(&got, buffer->data, sizeof(got)); });
  port.close();
  return got;
}

// fgets: returns the bytes received (the line and its NUL; 0 at the end of the file).
uint64_t rpc_fgets(void *c, uint64_t stream, char *out, int size) {
  Client::Port port = client(c).open<LIBC_READ_FGETS>();
  uint64_t got = 0;
  port.send([=](rpc::Buffer *buffer, uint32_t) {
    buffer->data[0] = static_cast<uint64_t>(size);
    buffer->data[1] = stream;
  });
  void *dst = nullptr;
  port.recv_n(&dst, &got, [&](uint64_t) { return out; });
  port.close();
  return got;
}

// remove (0), system (1): one string, one result.
uint64_t rpc_path_op(void *c, int op, const char *text) {
  uint64_t result = 0;
  auto exchange = [&](Client::Port &port) {
    port.send_n(text, strlen(text) + 1);
    port.recv([&](rpc::Buffer *buffer, uint32_t) { result = buffer->data[0]; });
    port.close();
  };
  if (op == 0) {
    Client::Port p = client(c).open<LIBC_REMOVE>();
    exchange(p);
  } else {
    Client::Port p = client(c).open<LIBC_SYSTEM>();
    exchange(p);
  }
  return result;
}

uint64_t rpc_rename(void *c, const char *from, const char *to) {
  Client::Port port = client(c).open<LIBC_RENAME>();
  port.send_n(from, strlen(from) + 1);
  port.send_n(to, strlen(to) + 1);
  uint64_t result = 0;
  port.recv([&](rpc::Buffer *buffer, uint32_t) { result = buffer->data[0]; });
  port.close();
  return result;
}

uint64_t rpc_malloc(void *c, uint64_t size) {
  Client::Port port = client(c).open<LIBC_MALLOC>();
  uint64_t address = 0;
  port.send_and_recv([=](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = size; },
                     [&](rpc::Buffer *buffer, uint32_t) { address = buffer->data[0]; });
  port.close();
  return address;
}

void rpc_free(void *c, uint64_t address) {
  Client::Port port = client(c).open<LIBC_FREE>();
  port.send([=](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = address; });
  port.close();
}

// __llvm_omp_host_call of LLVM 22's OpenMP device runtime, word for word.
uint64_t rpc_host_call(void *c, void *fn, void *data, uint64_t size) {
  Client::Port port = client(c).open<OFFLOAD_HOST_CALL>();
  port.send_n(data, size);
  port.send([=](rpc::Buffer *buffer, uint32_t) {
    buffer->data[0] = reinterpret_cast<uintptr_t>(fn);
  });
  unsigned long long ret;
  port.recv([&](rpc::Buffer *buffer, uint32_t) {
    ret = static_cast<unsigned long long>(buffer->data[0]);
  });
  port.close();
  return ret;
}

// printf as LLVM's GPU libc sends it (vfprintf_utils.h): to stdout (0), stderr (1) or a
// stream (2), the arguments already packed as the device packs its va_list; `packed` picks the
// _PACKED opcodes.
int rpc_printf(void *c, int where, bool packed, uint64_t stream, const char *format,
               const void *args, uint64_t args_len) {
  auto exchange = [&](Client::Port &port) -> int {
    if (where == 2)
      port.send([&](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = stream; });
    uint64_t args_size = 0;
    port.send_n(format, strlen(format) + 1);
    port.recv([&](rpc::Buffer *buffer, uint32_t) { args_size = buffer->data[0]; });
    if (args_size > args_len)
      args_size = args_len;
    port.send_n(args, args_size);
    uint32_t ret = 0;
    for (;;) {
      const char *str = nullptr;
      port.recv([&](rpc::Buffer *buffer, uint32_t) {
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
      Client::Port p = client(c).open<LIBC_PRINTF_TO_STDOUT_PACKED>();
      return exchange(p);
    }
    Client::Port p = client(c).open<LIBC_PRINTF_TO_STDOUT>();
    return exchange(p);
  }
  if (where == 1) {
    Client::Port p = client(c).open<LIBC_PRINTF_TO_STDERR>();
    return exchange(p);
  }
  Client::Port p = client(c).open<LIBC_PRINTF_TO_STREAM>();
  return exchange(p);
}

// A request no server knows: its port is opened and its first packet sent; the server must
// report it and not answer (the call does not return; tests run it on a thread of its own).
void rpc_unknown(void *c) {
  Client::Port port = client(c).open<(('z' << 24) | 7)>();
  port.send([](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = 1; });
  port.recv([](rpc::Buffer *, uint32_t) {});
  port.close();
}

// A damaged request: a size no buffer may have.
void rpc_damaged(void *c) {
  Client::Port port = client(c).open<LIBC_TEST_STREAM>();
  port.send([](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = ~0ull; });
  port.recv([](rpc::Buffer *, uint32_t) {});
  port.close();
}

// A device that stops in the middle of a request: the first packet of a 1000-byte stream,
// then nothing more (the port stays taken, as a kernel that died there leaves it).
void rpc_stall(void *c) {
  Client::Port port = client(c).open<LIBC_TEST_STREAM>();
  port.send([](rpc::Buffer *buffer, uint32_t) { buffer->data[0] = 1000; });
}
}
