// A kernel that uses LLVM's GPU libc (LLVM 22's from scripts/build-llvm22-gpu-libc.sh with
// clang-22, LLVM 19's from scripts/build-llvm19-gpu-libc.sh with clang-19) the way a user's
// does: printf, fprintf to stderr, puts, a file written and read back, malloc and free. On a
// GPU each call is a request to the plugin's RPC server; on the emulated drivers the x86-64
// twin runs instead, with the host's libc. The host checks what the kernel saw and wrote.
//
//   rpc_gpu_libc [FILE]     (default: this program's path with .txt)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_LEN 4096

int main(int argc, char **argv) {
  static char path[PATH_MAX_LEN];
  if (argc > 1)
    snprintf(path, sizeof path, "%s", argv[1]);
  else
    snprintf(path, sizeof path, "%s.txt", argv[0]);
  int printed = -1, wrote = -1, closed = -1, sum = -1;
  char read_back[64] = {0};

#pragma omp target map(to : path) map(from : printed, wrote, closed, sum, read_back)
  {
    printed = printf("device printf: %d %s %#x %c\n", 42, "from the GPU", 255u, 'z');
    fprintf(stderr, "device stderr: %ld\n", -7L);
    puts("device puts");
    FILE *out = fopen(path, "w");
    wrote = out ? (int)fwrite("written by the device\n", 1, 22, out) : -2;
    closed = out ? fclose(out) : -2;
    FILE *in = fopen(path, "r");
    if (in) {
      if (!fgets(read_back, sizeof read_back, in))
        read_back[0] = '\0';
      fclose(in);
    }
    int *block = (int *)malloc(100 * sizeof(int));
    sum = -2;
    if (block) {
      sum = 0;
      for (int i = 0; i < 100; ++i)
        block[i] = i;
      for (int i = 0; i < 100; ++i)
        sum += block[i];
      free(block);
    }
  }

  char on_host[64] = {0};
  FILE *check = fopen(path, "r");
  if (check) {
    if (!fgets(on_host, sizeof on_host, check))
      on_host[0] = '\0';
    fclose(check);
  }
  remove(path);
  printf("host: printed %d, wrote %d, closed %d, read back \"%.*s\", file \"%.*s\", sum %d\n",
         printed, wrote, closed, (int)strcspn(read_back, "\n"), read_back,
         (int)strcspn(on_host, "\n"), on_host, sum);
  int expected = snprintf(NULL, 0, "device printf: %d %s %#x %c\n", 42, "from the GPU", 255u, 'z');
  int ok = printed == expected && wrote == 22 && closed == 0 &&
           strcmp(read_back, "written by the device\n") == 0 &&
           strcmp(on_host, "written by the device\n") == 0 && sum == 4950;
  puts(ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
