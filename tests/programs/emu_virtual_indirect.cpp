// Virtual calls through declare-target-indirect classes (clang-22 lists their virtual tables in
// the offload entries, LLVM 22's INDIRECT_VTABLE): the program prints each object's virtual
// table pointer (a slot of its class's table), which the runtime's indirect-call table must
// translate to the device's copy of that slot.
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
  std::printf("vptr derived=%p base=%p\n", *(void **)&d, *(void **)&b);
  std::printf("derived=%d base=%d\n", derived, base);
  return !(derived == 42 && base == 21);
}
