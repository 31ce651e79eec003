// A program whose offload entry table is damaged: one entry's name pointer points nowhere.
// Registering it must end with the runtime's message, not a fault reading the name.
#include <stdint.h>
#include <stdio.h>

struct entry { void *addr; const char *name; uint64_t size; int32_t flags, reserved; };
struct image { void *start, *end; struct entry *entries_begin, *entries_end; };
struct desc { int32_t count; struct image *images; struct entry *begin, *end; };

void __tgt_register_lib(struct desc *);
void __tgt_unregister_lib(struct desc *);

static int global;

int main(int argc, char **argv) {
  (void)argv;
  struct entry entries[2] = {
      {&global, "global", sizeof global, 0, 0},
      // Where a damaged relocation leaves it; argc keeps the compiler from knowing.
      {&global, (const char *)(uintptr_t)(0x7fffdead0000ull + (unsigned)argc), 4, 0, 0},
  };
  struct desc d = {0, 0, entries, entries + 2};
  __tgt_register_lib(&d);
  __tgt_unregister_lib(&d);
  printf("survived\n");
  return 0;
}
