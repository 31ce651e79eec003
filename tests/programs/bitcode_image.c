// Registers a device image of LLVM IR (bitcode), as clang's -fopenmp-target-jit builds them:
// the bytes of the file argv[1], in an offload-binary container naming the triple argv[2]
// (bare, without the container, when argv[2] is "bare"). Then counts the devices and runs a
// region (of the program's own image), so that the runtime goes on after refusing the image.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry { void *addr; const char *name; uint64_t size; int32_t flags, reserved; };
struct image { void *start, *end; struct entry *entries_begin, *entries_end; };
struct desc { int32_t count; struct image *images; struct entry *begin, *end; };

void __tgt_register_lib(struct desc *);
void __tgt_unregister_lib(struct desc *);

/* The offload-binary container (LLVM's OffloadBinary, version 1). */
struct header { uint8_t magic[4]; uint32_t version; uint64_t size, entry_offset, entry_size; };
struct binary_entry {
  uint16_t image_kind, offload_kind;
  uint32_t flags;
  uint64_t string_offset, num_strings, image_offset, image_size;
};
struct string_pair { uint64_t key, value; };

enum { IMG_BITCODE = 2, OFK_OPENMP = 1 };

static unsigned char *wrap(const unsigned char *image, size_t size, const char *triple,
                           size_t *total) {
  const char *arch = "generic";
  size_t strings = sizeof(struct header) + sizeof(struct binary_entry);
  size_t text = strings + 2 * sizeof(struct string_pair);
  size_t key_triple = text, value_triple = key_triple + strlen("triple") + 1;
  size_t key_arch = value_triple + strlen(triple) + 1, value_arch = key_arch + strlen("arch") + 1;
  size_t image_at = (value_arch + strlen(arch) + 1 + 7) & ~(size_t)7;
  *total = image_at + size;
  unsigned char *b = calloc(1, *total);
  struct header h = {{0x10, 0xFF, 0x10, 0xAD}, 1, *total, sizeof h, sizeof(struct binary_entry)};
  struct binary_entry e = {IMG_BITCODE, OFK_OPENMP, 0, strings, 2, image_at, size};
  struct string_pair pairs[2] = {{key_triple, value_triple}, {key_arch, value_arch}};
  memcpy(b, &h, sizeof h);
  memcpy(b + sizeof h, &e, sizeof e);
  memcpy(b + strings, pairs, sizeof pairs);
  strcpy((char *)b + key_triple, "triple");
  strcpy((char *)b + value_triple, triple);
  strcpy((char *)b + key_arch, "arch");
  strcpy((char *)b + value_arch, arch);
  memcpy(b + image_at, image, size);
  return b;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 2;
  static unsigned char bytes[1 << 20];
  size_t size = fread(bytes, 1, sizeof bytes, f);
  fclose(f);
  size_t total = size;
  unsigned char *start = bytes;
  if (strcmp(argv[2], "bare") != 0) start = wrap(bytes, size, argv[2], &total);
  struct image img = {start, start + total, NULL, NULL};
  struct desc d = {1, &img, NULL, NULL};
  __tgt_register_lib(&d);
  int devices = omp_get_num_devices(), on_host = 1;
#pragma omp target map(from: on_host)
  on_host = omp_is_initial_device();
  printf("devices=%d region ran %s\n", devices, on_host ? "on the host" : "on a device");
  __tgt_unregister_lib(&d);
  return 0;
}
