// RULE: use_device_addr of a reference member whose referent was mapped before gives the device address of the whole referent, also when the construct maps only an element of it (a pointer-and-pointee entry whose base is read through the reference)
// EXPECT: whole=yes element=yes
#include <omp.h>
#include <stdio.h>

int *table_storage[4][4];
int value = 7;

struct Holder {
  int *(&table)[4][4] = table_storage;

  int check() {
    table[0][2] = &value;
#pragma omp target enter data map(to : table)
    void *mapped = omp_get_mapped_ptr(&table, omp_get_default_device());
    void *whole = nullptr, *element = nullptr;
#pragma omp target data use_device_addr(table)
    whole = &table;
#pragma omp target data map(table[0][2]) use_device_addr(table)
    element = &table;
#pragma omp target exit data map(release : table)
    int ok_whole = mapped != nullptr && whole == mapped;
    int ok_element = mapped != nullptr && element == mapped;
    printf("whole=%s element=%s\n", ok_whole ? "yes" : "no", ok_element ? "yes" : "no");
    return !(ok_whole && ok_element);
  }
};

int main() {
  Holder h;
  return h.check();
}
