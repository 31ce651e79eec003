// RULE: an object of a class declared target indirect, built on the host and mapped, has its virtual functions called in a kernel through its host virtual table (clang 22 lists the tables in the offload entries; a GPU translates them through the indirect-call table)
// NOT-ON-MPI: indirect calls: the program's function pointers are addresses in another process
// EXPECT: derived=42 base=21
// COMPILERS: clang22
// (clang 19 crashes compiling a declare-target-indirect class mapped to the device)
#include <cstdio>

#pragma omp begin declare target indirect
struct Base {
  virtual int scale(int x) { return x; }
};
struct Derived : Base {
  int scale(int x) override { return 2 * x; }
};
#pragma omp end declare target

int main() {
  Derived d;
  Base b;
  int derived = 0, base = 0;
#pragma omp target map(to : d, b) map(from : derived, base)
  {
    Base *p = &d;
    derived = p->scale(21);
    p = &b;
    base = p->scale(21);
  }
  // The objects' virtual table pointers, for the emulator's test of the indirect-call table
  // (tests/tests/emu_cuda.rs).
  std::printf("vptr derived=%p base=%p\n", *(void **)&d, *(void **)&b);
  std::printf("derived=%d base=%d\n", derived, base);
  return !(derived == 42 && base == 21);
}
// NEEDS: nvlink
